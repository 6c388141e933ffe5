package sandbox

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=dockerhosts,verbs=get;list;watch
// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=dockerhosts/status,verbs=get;update;patch

// hostRecheck is how often a Sandbox waiting for its host looks again besides
// on the host's changes.
const hostRecheck = 30 * time.Second

// waitingForHost maps a change of this host (uncordoned, capacity raised or
// freed) to the Sandboxes waiting to be admitted onto it or to grow there, and to those its
// namespace's SandboxPolicy stalled (its labels may allow them now).
func (r *Reconciler) waitingForHost(ctx context.Context, _ client.Object) []reconcile.Request {
	var out []reconcile.Request
	waiting := r.onHostWith(ctx, "", sandboxv1.ConditionReady, sandboxv1.ReasonUnschedulable)
	for _, sb := range append(waiting, r.onHostWith(ctx, "", sandboxv1.ConditionUpToDate, sandboxv1.ReasonUnschedulable)...) {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&sb)})
	}
	return append(out, r.stalledByPolicy(ctx, nil)...)
}
