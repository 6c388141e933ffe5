package sandbox

import (
	"cmp"
	"context"
	"math"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// quotaRecheck is how often a Sandbox waiting for quota looks again besides on
// its quotas' changes (a freed entry re-queues the next in line at once).
const quotaRecheck = 30 * time.Second

// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=sandboxquotas,verbs=get;list;watch
// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=sandboxquotas/status,verbs=get;update;patch

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
	// Note: and every Sandbox whose growth waits (it runs, holding what it was admitted to).
	waiting = append(waiting, r.onHostWith(ctx, obj.GetNamespace(), sandboxv1.ConditionUpToDate, sandboxv1.ReasonQuotaExceeded)...)
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
