package admission

import (
	"cmp"
	"context"
	"math"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/index"
)

// Waiters finds the objects of one kind (KindSandbox, KindPool) bound to a
// host that wait on what changed: a SandboxPolicy, the host, a SandboxQuota,
// or a ConfigMap their class reads (from the cache).
type Waiters struct {
	Reader client.Reader
	Host   string
	Kind   string
}

// waiter is what the mappers read of a Sandbox or a pool.
type waiter struct {
	key        types.NamespacedName
	uid        types.UID
	created    metav1.Time
	conditions []metav1.Condition
	// inits are the ConfigMaps of its services' init scripts.
	inits []string
}

// Stalled maps a SandboxPolicy's change (or the host's labels) to the objects
// it stalled: a pinned host it refused may be allowed now.
func (w Waiters) Stalled(ctx context.Context, _ client.Object) []reconcile.Request {
	return keys(w.with(ctx, "", sandboxv1.ConditionStalled, sandboxv1.ReasonPolicyViolation))
}

// OnHost maps a change of the host (uncordoned, capacity raised or freed, new
// labels) to the objects waiting to be admitted onto it or to grow there
// (Unschedulable; a pool short of members, Cordoned), and those a policy stalled.
func (w Waiters) OnHost(ctx context.Context, obj client.Object) []reconcile.Request {
	waiting := w.with(ctx, "", sandboxv1.ConditionReady, sandboxv1.ReasonUnschedulable)
	waiting = append(waiting, w.with(ctx, "", sandboxv1.ConditionReady, sandboxv1.ReasonCordoned)...)
	waiting = append(waiting, w.with(ctx, "", sandboxv1.ConditionUpToDate, sandboxv1.ReasonUnschedulable)...)
	return append(keys(waiting), w.Stalled(ctx, obj)...)
}

// ForQuota maps a SandboxQuota's change to the objects of its namespace that
// wait for room. Sandboxes waiting whole are woken as many as it has room for
// (by count, when it limits the count), oldest first: waking every one on
// each admission made them all race for the few freed places, each pass a
// live read and a status write, and the winners waited seconds behind the
// herd. Those that wait to grow (a Sandbox held, a pool short of members,
// whatever it holds already) are all woken.
func (w Waiters) ForQuota(ctx context.Context, obj client.Object) []reconcile.Request {
	waiting := w.with(ctx, obj.GetNamespace(), sandboxv1.ConditionReady, sandboxv1.ReasonQuotaExceeded)
	if w.Kind == KindSandbox {
		waiting = w.firstInLine(obj, waiting)
	}
	waiting = append(waiting, w.with(ctx, obj.GetNamespace(), sandboxv1.ConditionUpToDate, sandboxv1.ReasonQuotaExceeded)...)
	return keys(waiting)
}

// ForInit maps a ConfigMap's change to the objects whose services' init names
// it: their class changes (a Sandbox's services, a pool's members are seeded
// anew), and one that waited for it (InitFailed) goes on.
func (w Waiters) ForInit(ctx context.Context, obj client.Object) []reconcile.Request {
	fields := client.MatchingFields{index.DockerHost: w.Host}
	if w.Kind == KindSandbox {
		fields = client.MatchingFields{index.InitConfigMap: obj.GetName()} // Note: no scan of the host's Sandboxes.
	}
	all, err := w.list(ctx, obj.GetNamespace(), fields)
	if err != nil {
		return nil
	}
	return keys(slices.DeleteFunc(all, func(s waiter) bool { return !slices.Contains(s.inits, obj.GetName()) }))
}

// firstInLine are the waiting Sandboxes the quota obj has room for, oldest first.
func (w Waiters) firstInLine(obj client.Object, waiting []waiter) []waiter {
	q, _ := obj.(*sandboxv1.SandboxQuota)
	// Note: one admitted whose status does not say so yet is no waiter: woken
	// again in its stead, the next in line would never be.
	waiting = slices.DeleteFunc(waiting, func(s waiter) bool { return admitted(q, s.uid) })
	slices.SortFunc(waiting, func(a, b waiter) int {
		return cmp.Or(a.created.Compare(b.created.Time), cmp.Compare(a.key.Name, b.key.Name))
	})
	if q != nil {
		waiting = waiting[:min(len(waiting), roomByCount(q))]
	}
	return waiting
}

// admitted: q records uid.
func admitted(q *sandboxv1.SandboxQuota, uid types.UID) bool {
	if q == nil {
		return false
	}
	return slices.ContainsFunc(q.Status.Admitted, func(a sandboxv1.QuotaAdmission) bool { return a.UID == uid })
}

// roomByCount is how many more Sandboxes q admits by its count: any number
// when it limits none, or limits memory too (the oldest waiter may need more
// than is free while a younger one fits: every waiter looks).
func roomByCount(q *sandboxv1.SandboxQuota) int {
	h, u := q.Spec.Hard.Sandboxes, q.Status.Used.Sandboxes
	if h == nil || q.Spec.Hard.Memory != nil {
		return math.MaxInt
	}
	used := int32(0)
	if u != nil {
		used = *u
	}
	return int(max(0, *h-used))
}

// with lists the objects of namespace ("": all) on the host whose condition
// condType has reason.
func (w Waiters) with(ctx context.Context, namespace, condType, reason string) []waiter {
	all, err := w.list(ctx, namespace, client.MatchingFields{index.DockerHost: w.Host})
	if err != nil {
		return nil
	}
	return slices.DeleteFunc(all, func(s waiter) bool {
		c := meta.FindStatusCondition(s.conditions, condType)
		return c == nil || c.Reason != reason
	})
}

// list is the objects of w's kind in namespace on the host that match fields.
func (w Waiters) list(ctx context.Context, namespace string, fields client.MatchingFields) ([]waiter, error) {
	var out []waiter
	if w.Kind == KindPool {
		var list sandboxv1.SandboxPoolList
		err := w.Reader.List(ctx, &list, client.InNamespace(namespace), fields)
		for _, p := range list.Items {
			if p.Spec.DockerHost == w.Host {
				out = append(out, waiter{key: client.ObjectKeyFromObject(&p), uid: p.UID, created: p.CreationTimestamp,
					conditions: p.Status.Conditions, inits: inits(p.Spec.Service)})
			}
		}
		return out, err
	}
	var list sandboxv1.SandboxList
	err := w.Reader.List(ctx, &list, client.InNamespace(namespace), fields)
	for _, sb := range list.Items {
		if sb.Spec.DockerHost == w.Host {
			out = append(out, waiter{key: client.ObjectKeyFromObject(&sb), uid: sb.UID, created: sb.CreationTimestamp,
				conditions: sb.Status.Conditions, inits: inits(sb.Spec.Services...)})
		}
	}
	return out, err
}

// inits are the ConfigMaps the init scripts of svcs come from.
func inits(svcs ...sandboxv1.ServiceSpec) []string {
	var out []string
	for _, svc := range svcs {
		if svc.Init != nil && svc.Init.ConfigMapRef != nil {
			out = append(out, svc.Init.ConfigMapRef.Name)
		}
	}
	return out
}

func keys(ws []waiter) []reconcile.Request {
	out := make([]reconcile.Request, 0, len(ws))
	for _, s := range ws {
		out = append(out, reconcile.Request{NamespacedName: s.key})
	}
	return out
}
