package sandboxpool

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/capacity"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
)

// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=dockerhosts/status,verbs=get;update;patch

// hostVerdict is what the pool's host lets it make this pass.
type hostVerdict struct {
	why string
	// waiting: the pool has no member here and waits to be admitted whole
	// (capacity.Waiting: it holds no room meanwhile).
	waiting bool
}

// admittedOnHost holds the pool to its host's cordon, capacity and deletion,
// as placement does for the pools it places (spec.dockerHost skips it). A
// pool with no member here is admitted whole (its replicas) or waits; one
// with members keeps them, serving claims, but makes no new one on a host
// cordoned or being deleted. ms.missing is 0 when refused.
func (p *Reconciler) admittedOnHost(ctx context.Context, pool *sandboxv1.SandboxPool, ms *poolMembers) (hostVerdict, error) {
	if len(ms.ready)+len(ms.starting)+len(ms.unwanted) > 0 {
		h := &sandboxv1.DockerHost{}
		if err := p.Get(ctx, types.NamespacedName{Name: p.Scope.Name}, h); err != nil {
			return hostVerdict{}, err
		}
		if why := capacity.Closed(h); why != "" {
			ms.missing = 0
			return hostVerdict{why: why + ": its members serve claims, no new one is made"}, nil
		}
		return hostVerdict{}, nil
	}
	a := capacity.Admission{Client: p.Client, API: p.API, Cache: p.Client, Options: p.Options}
	req := capacity.Request{Key: pool.Namespace + "/" + pool.Name, UID: string(pool.UID), Need: capacity.OfPool(p.Options, pool)}
	why, err := a.Admit(ctx, p.Scope.Name, req, pool.Status.Conditions)
	if apierrors.IsConflict(err) {
		ms.missing = 0 // looked at again soon (the caller re-queues a pass that made none)
		return hostVerdict{}, nil
	}
	if why != "" {
		ms.missing = 0
	}
	return hostVerdict{why: why, waiting: why != ""}, err
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
