package sandbox

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/capacity"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
)

// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=dockerhosts,verbs=get;list;watch
// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=dockerhosts/status,verbs=get;update;patch

// hostRecheck is how often a Sandbox waiting for its host looks again besides
// on the host's changes.
const hostRecheck = 30 * time.Second

// admittedOnHost holds sb to its host's cordon, capacity and deletion before
// anything of it is made. Placement checks them for the Sandboxes it places;
// spec.dockerHost, set by the author, skips placement (unlike a pod's
// spec.nodeName, which skips every check the scheduler makes). What already
// runs stays: a cordon or a deletion evicts nothing.
func (r *Reconciler) admittedOnHost(ctx context.Context, sb *sandboxv1.Sandbox) (ctrl.Result, bool, error) {
	if madeAnything(sb) {
		return ctrl.Result{}, true, nil
	}
	a := capacity.Admission{Client: r.Client, API: r.APIReader, Cache: r.Client, Options: r.Options}
	req := capacity.Request{Key: sb.Namespace + "/" + sb.Name, UID: string(sb.UID), Need: capacity.OfSandbox(r.Options, sb)}
	why, err := a.Admit(ctx, r.Scope.Name, req, sb.Status.Conditions)
	switch {
	case apierrors.IsConflict(err):
		return ctrl.Result{RequeueAfter: kit.ConflictRetry}, false, nil
	case err != nil:
		return ctrl.Result{}, false, err
	case why == "":
		return ctrl.Result{}, true, nil
	}
	sb.Status.ObservedGeneration = sb.Generation
	kit.SetCondition(sb, sandboxv1.ConditionReady, metav1.ConditionFalse, sandboxv1.ReasonUnschedulable, why)
	kit.SetCondition(sb, sandboxv1.ConditionReconciling, metav1.ConditionTrue, sandboxv1.ReasonUnschedulable, "waiting for its Docker host: "+why)
	meta.RemoveStatusCondition(&sb.Status.Conditions, sandboxv1.ConditionStalled)
	return ctrl.Result{RequeueAfter: kit.Jitter(hostRecheck)}, false, nil
}

// waitingForHost maps a change of this host (uncordoned, capacity raised or
// freed) to the Sandboxes waiting to be admitted onto it, and to those its
// namespace's SandboxPolicy stalled (its labels may allow them now).
func (r *Reconciler) waitingForHost(ctx context.Context, _ client.Object) []reconcile.Request {
	var out []reconcile.Request
	for _, sb := range r.onHostWith(ctx, "", sandboxv1.ConditionReady, sandboxv1.ReasonUnschedulable) {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&sb)})
	}
	return append(out, r.stalledByPolicy(ctx, nil)...)
}
