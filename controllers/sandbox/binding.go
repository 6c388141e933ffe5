package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/chaosplant"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
)

// reconcileDockerHost binds the Sandbox to the Docker host the manager talks to on
// its first pass, persisted before anything exists there (with the claim
// records, or by bindFirst), and afterwards checks
// that it is still that host. When it is not, or cannot be proven, the pass stops
// here: nothing is created, removed or judged for the Sandbox, and status says why.
func (r *Reconciler) reconcileDockerHost(ctx context.Context, sb *sandboxv1.Sandbox) (ctrl.Result, bool, error) {
	before := sb.DeepCopy()
	current, err := r.currentHost(ctx, sb)
	bound := sb.Status.DockerHost
	switch {
	case err != nil:
		hostUnproven(sb, err, retryLater(ctx))
		return r.memory.pace(ctx, sb, ctrl.Result{}), false, r.writeStatus(ctx, before, sb)
	case bound == nil:
		// Note: written with the pass's first status write, which comes before
		// anything is made on the host (bindFirst).
		sb.Status.DockerHost = kit.HostStatus(current)
		bindLater(ctx)
		desc := kit.DescribeHost(*sb.Status.DockerHost)
		afterPass(ctx, func() {
			r.Recorder.Eventf(sb, nil, corev1.EventTypeNormal, sandboxv1.EventDockerHostBound, sandboxv1.ActionReconcile, "bound to Docker host %s", desc)
		})
		logf.FromContext(ctx).Info("Sandbox bound to its Docker host", "hostID", current.ID, "daemonID", current.DaemonID, "hostName", current.Name)
		return ctrl.Result{}, true, nil
	case bound.ID != current.ID && !chaosplant.Active(chaosplant.IdentitySkipped):
		wrongHost(sb, kit.WrongHostMessage(*bound, current, "nothing is created, removed or judged for it here; run a manager against that host"))
		return r.memory.pace(ctx, sb, ctrl.Result{RequeueAfter: kit.Jitter(kit.HostRecheck)}), false, r.writeStatus(ctx, before, sb)
	}
	return ctrl.Result{}, true, nil
}

// currentHost proves the identity of the Docker host the manager talks to. For a
// Sandbox bound elsewhere, a proof older than hostRecheck is read again.
func (r *Reconciler) currentHost(ctx context.Context, sb *sandboxv1.Sandbox) (dd.HostIdentity, error) {
	current, err := r.Identity.Prove(ctx)
	if err == nil && sb.Status.DockerHost != nil && sb.Status.DockerHost.ID != current.ID {
		return r.Identity.Recheck(ctx, kit.HostRecheck)
	}
	return current, err
}

// teardownHost decides whether a deleted Sandbox's containers can be torn down
// here: yes on the host it is bound to (or any proven host, for a Sandbox never
// bound). On another host its containers cannot be confirmed gone, so the finalizer
// stays, unless the operator released the Sandbox (AnnotationReleaseDockerHost set
// to the bound host's id); released is then true and nothing is torn down.
func (r *Reconciler) teardownHost(ctx context.Context, sb *sandboxv1.Sandbox) (proceed, released bool, result ctrl.Result) {
	current, err := r.currentHost(ctx, sb)
	bound := sb.Status.DockerHost
	switch {
	case err != nil:
		kit.SetCondition(sb, sandboxv1.ConditionReady, metav1.ConditionFalse, kit.HostReason(err),
			fmt.Sprintf("cannot tear down: %v; retrying in %s", err, retryLater(ctx).Round(time.Second)))
		return false, false, ctrl.Result{}
	case bound == nil || bound.ID == current.ID:
		return true, false, ctrl.Result{}
	case sb.Annotations[sandboxv1.AnnotationReleaseDockerHost] == bound.ID:
		r.Recorder.Eventf(sb, nil, corev1.EventTypeWarning, sandboxv1.EventDockerHostReleased, sandboxv1.ActionTeardown,
			"released by %s without tearing down: its containers on Docker host %s are not removed", sandboxv1.AnnotationReleaseDockerHost, kit.DescribeHost(*bound))
		logf.FromContext(ctx).Info("Sandbox released from its Docker host without teardown", "host", bound.ID, "current", current.ID)
		return false, true, ctrl.Result{}
	}
	kit.SetCondition(sb, sandboxv1.ConditionReady, metav1.ConditionFalse, sandboxv1.ReasonWrongDockerHost,
		kit.WrongHostMessage(*bound, current, fmt.Sprintf("its containers there cannot be confirmed gone, so the finalizer stays; run a manager against that host, or, if it is gone for good, annotate the Sandbox %s=%s to let it go without teardown",
			sandboxv1.AnnotationReleaseDockerHost, bound.ID)))
	return false, false, ctrl.Result{RequeueAfter: kit.Jitter(kit.HostRecheck)}
}

// hostGone says, on a Sandbox bound to a DockerHost that was deleted, that
// nothing is done for it: its containers, if any, are on a daemon no DockerHost
// names any more. A deleted one is let go (letGo).
func (r *Reconciler) hostGone(ctx context.Context, req ctrl.Request) error {
	sb := &sandboxv1.Sandbox{}
	if err := r.Get(ctx, req.NamespacedName, sb); err != nil || sb.Spec.DockerHost != r.Scope.Name {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return client.IgnoreNotFound(err)
	}
	if !sb.DeletionTimestamp.IsZero() {
		return r.letGo(ctx, sb)
	}
	before := sb.DeepCopy()
	msg := fmt.Sprintf("spec.dockerHost %s names no DockerHost (it was deleted): nothing is made, removed or judged for this Sandbox; "+
		"register that DockerHost again, or delete the Sandbox", r.Scope.Name)
	sb.Status.ObservedGeneration = sb.Generation
	kit.SetCondition(sb, sandboxv1.ConditionReady, metav1.ConditionFalse, sandboxv1.ReasonDockerHostNotFound, msg)
	kit.SetCondition(sb, sandboxv1.ConditionStalled, metav1.ConditionTrue, sandboxv1.ReasonDockerHostNotFound, msg)
	meta.RemoveStatusCondition(&sb.Status.Conditions, sandboxv1.ConditionReconciling)
	return r.writeStatus(ctx, before, sb)
}

// hostUnproven says that the manager cannot prove which Docker host it talks to.
func hostUnproven(sb *sandboxv1.Sandbox, err error, retryIn time.Duration) {
	if errors.Is(err, dd.ErrUnavailable) {
		dockerDown(sb, err, retryIn)
		return
	}
	msg := fmt.Sprintf("%v; nothing is created, removed or judged until it can; retrying in %s", err, retryIn.Round(time.Second))
	sb.Status.ObservedGeneration = sb.Generation
	kit.SetCondition(sb, sandboxv1.ConditionReady, metav1.ConditionFalse, sandboxv1.ReasonDockerHostUnproven, msg)
	kit.SetCondition(sb, sandboxv1.ConditionReconciling, metav1.ConditionTrue, sandboxv1.ReasonDockerHostUnproven, "retrying: "+msg)
	meta.RemoveStatusCondition(&sb.Status.Conditions, sandboxv1.ConditionStalled)
}

// wrongHost says the Sandbox is bound to another Docker host: stalled until a
// manager talks to that host again. What this host says of its containers and
// owner means nothing for it.
func wrongHost(sb *sandboxv1.Sandbox, msg string) {
	sb.Status.ObservedGeneration = sb.Generation
	kit.SetCondition(sb, sandboxv1.ConditionReady, metav1.ConditionFalse, sandboxv1.ReasonWrongDockerHost, msg)
	kit.SetCondition(sb, sandboxv1.ConditionStalled, metav1.ConditionTrue, sandboxv1.ReasonWrongDockerHost, msg)
	for _, t := range []string{sandboxv1.ConditionContainersRunning, sandboxv1.ConditionOwnerAlive} {
		kit.SetCondition(sb, t, metav1.ConditionUnknown, sandboxv1.ReasonWrongDockerHost, "not observed: the manager talks to another Docker host")
	}
	meta.RemoveStatusCondition(&sb.Status.Conditions, sandboxv1.ConditionReconciling)
}

// bindLater notes that the pass bound the Sandbox and has not written it yet.
func bindLater(ctx context.Context) {
	if p, ok := ctx.Value(passKey{}).(*pass); ok {
		p.unbound.Store(true)
	}
}

// bindingUnwritten says whether the pass's binding waits for its first status
// write, and takes it as written (the caller writes it).
func bindingUnwritten(ctx context.Context) bool {
	p, ok := ctx.Value(passKey{}).(*pass)
	return ok && p.unbound.Swap(false)
}

// bindFirst writes the pass's binding when no status write carried it yet:
// before anything is made on the host. It writes all the pass has set so far
// (its owner's verdict among it) as a patch from base, and base becomes what
// it wrote: the pass's publish patches from there.
//
// Note: the server's answer goes to a copy, never to sb: taken as the pass's
// own status, it dropped what the pass had set and not written yet (a Sandbox
// that waited Unschedulable published its first Ready without OwnerAlive).
// Only base's status moves: its resourceVersion in the publish's patch would
// make it conditional.
func (r *Reconciler) bindFirst(ctx context.Context, base, sb *sandboxv1.Sandbox) error {
	if !bindingUnwritten(ctx) {
		return nil
	}
	if err := r.writeStatus(ctx, base, sb.DeepCopy()); err != nil {
		return err
	}
	sb.Status.DeepCopyInto(&base.Status)
	return nil
}
