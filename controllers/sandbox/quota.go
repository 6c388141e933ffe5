package sandbox

import (
	"cmp"
	"context"
	"math"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/capacity"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
	"github.com/roboco-sandbox/sandbox-controller/internal/quota"
)

// quotaRecheck is how often a Sandbox waiting for quota looks again besides on
// its quotas' changes (a freed entry re-queues the next in line at once).
const quotaRecheck = 30 * time.Second

// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=sandboxquotas,verbs=get;list;watch
// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=sandboxquotas/status,verbs=get;update;patch

// admit holds sb's room under its namespace's SandboxQuotas before anything of
// it is made (its Secret, a container, a claim); ok is false while it waits.
// A Sandbox that already made something is admitted whatever the quota says.
func (r *Reconciler) admit(ctx context.Context, sb *sandboxv1.Sandbox) (ctrl.Result, bool, error) {
	req := quota.Request{Namespace: sb.Namespace, Name: sb.Name, Kind: "Sandbox", UID: sb.UID,
		Unit: quota.Amounts{Sandboxes: 1, Memory: capacity.OfSandbox(r.Options, sb).Memory}, Count: 1}
	if madeAnything(sb) {
		req.Min = 1
	}
	v, err := quota.Admit(ctx, r.Client, r.APIReader, req)
	switch {
	case apierrors.IsConflict(err):
		return ctrl.Result{RequeueAfter: kit.ConflictRetry}, false, nil
	case err != nil:
		return ctrl.Result{}, false, err
	case v.Admitted == 1:
		return ctrl.Result{}, true, nil
	}
	quotaExceeded(sb, v.Why)
	return ctrl.Result{RequeueAfter: kit.Jitter(quotaRecheck)}, false, nil
}

// madeAnything: a container or a claimed member of sb is recorded.
func madeAnything(sb *sandboxv1.Sandbox) bool {
	for _, s := range sb.Status.Services {
		if s.ContainerID != "" {
			return true
		}
	}
	return len(sb.Status.Claims) > 0
}

// quotaExceeded says sb waits for room, as Unschedulable says it waits for a host.
func quotaExceeded(sb *sandboxv1.Sandbox, why string) {
	sb.Status.ObservedGeneration = sb.Generation
	kit.SetCondition(sb, sandboxv1.ConditionReady, metav1.ConditionFalse, sandboxv1.ReasonQuotaExceeded, why)
	kit.SetCondition(sb, sandboxv1.ConditionReconciling, metav1.ConditionTrue, sandboxv1.ReasonQuotaExceeded, "waiting for quota: "+why)
	meta.RemoveStatusCondition(&sb.Status.Conditions, sandboxv1.ConditionStalled)
}

// waitingForQuota maps a SandboxQuota's change to the Sandboxes of its
// namespace on this host that wait for room: as many as it has room for (by
// count, when it limits the count), oldest first. Waking every waiter on each
// admission made them all race for the few freed places, each pass a live read
// and a status write, and the winners waited seconds behind the herd.
func (r *Reconciler) waitingForQuota(ctx context.Context, obj client.Object) []reconcile.Request {
	q, _ := obj.(*sandboxv1.SandboxQuota)
	// Note: one admitted whose status does not say so yet is no waiter: woken
	// again in its stead, the next in line would never be.
	waiting := slices.DeleteFunc(r.onHostWith(ctx, obj.GetNamespace(), sandboxv1.ConditionReady, sandboxv1.ReasonQuotaExceeded),
		func(sb sandboxv1.Sandbox) bool { return admitted(q, sb.UID) })
	slices.SortFunc(waiting, func(a, b sandboxv1.Sandbox) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
	})
	if q != nil {
		waiting = waiting[:min(len(waiting), roomByCount(q))]
	}
	out := make([]reconcile.Request, 0, len(waiting))
	for _, sb := range waiting {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&sb)})
	}
	return out
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
