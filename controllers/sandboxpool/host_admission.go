package sandboxpool

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/capacity"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
	"github.com/roboco-sandbox/sandbox-controller/internal/quota"
)

// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=dockerhosts/status,verbs=get;update;patch

// hostVerdict is what the pool's host lets it make this pass.
type hostVerdict struct {
	why string
	// waiting: the pool has no member here and waits to be admitted whole
	// (capacity.Waiting: it holds no room meanwhile).
	waiting bool
	// members is how many members the host admits (what the pool was admitted
	// to before, when its growth is refused).
	members int32
	// retry: a conflict; nothing was judged, nothing is made this pass.
	retry bool
}

// admittedOnHost holds the pool to its host's cordon, capacity and deletion,
// as placement does for the pools it places (spec.dockerHost skips it), for
// what it asks beyond what it was admitted to (status.admitted). A pool with
// no member here is admitted whole (its replicas) or waits; one with members
// keeps them, serving claims, and makes new ones only up to what it was
// admitted to while its growth is refused (a pool scaled up on a full host,
// cordoned or being deleted). ms.missing is lowered to that.
func (p *Reconciler) admittedOnHost(ctx context.Context, pool *sandboxv1.SandboxPool, ms *poolMembers) (hostVerdict, error) {
	replicas := ptrOr(pool.Spec.Replicas, 1)
	have := len(ms.ready) + len(ms.starting) + len(ms.unwanted)
	recorded := quota.RecordedPool(p.Options, pool)
	a := capacity.Admission{Client: p.Client, API: p.API, Cache: p.Client, Options: p.Options}
	req := capacity.Request{Key: pool.Namespace + "/" + pool.Name, UID: string(pool.UID), Need: capacity.OfPool(p.Options, pool)}
	if recorded != nil {
		d := capacity.OfAdmitted(recorded.Admitted())
		req.Admitted = &d
	}
	why, err := a.Admit(ctx, p.Scope.Name, req, pool.Status.Conditions)
	if apierrors.IsConflict(err) {
		ms.missing = 0 // looked at again soon (the caller re-queues a pass that made none)
		return hostVerdict{retry: true}, nil
	}
	if err != nil || why == "" {
		return hostVerdict{members: replicas}, err
	}
	if have == 0 && recorded == nil {
		ms.missing = 0
		return hostVerdict{why: why, waiting: true}, nil
	}
	v := hostVerdict{why: why + ": its members serve claims; no member beyond what it was admitted to is made", members: admittedMembers(recorded)}
	ms.missing = min(ms.missing, max(0, int(v.members)-len(ms.ready)-len(ms.starting)))
	return v, nil
}

// admittedMembers is how many members a record admits.
func admittedMembers(recorded *quota.Amounts) int32 {
	if recorded == nil {
		return 0
	}
	return recorded.PoolMembers
}

// say puts the verdict in the pool's Ready condition.
func (v hostVerdict) say(pool *sandboxv1.SandboxPool) {
	switch {
	case v.waiting:
		kit.SetCondition(pool, sandboxv1.ConditionReady, metav1.ConditionFalse, sandboxv1.ReasonUnschedulable, v.why)
	case v.why != "" && pool.Status.ReadyReplicas < ptrOr(pool.Spec.Replicas, 1):
		kit.SetCondition(pool, sandboxv1.ConditionReady, metav1.ConditionFalse, sandboxv1.ReasonCordoned, v.why)
	}
}

// waitingForHost maps a change of this host to the pools waiting for it, or
// stalled by their namespace's SandboxPolicy (its labels may allow them now).
func (p *Reconciler) waitingForHost(ctx context.Context, _ client.Object) []reconcile.Request {
	out := p.onHostWith(ctx, "", sandboxv1.ConditionReady, sandboxv1.ReasonUnschedulable)
	out = append(out, p.onHostWith(ctx, "", sandboxv1.ConditionReady, sandboxv1.ReasonCordoned)...)
	return append(out, p.stalledByPolicy(ctx, nil)...)
}
