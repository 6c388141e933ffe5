package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/chaosplant"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
)

// bindHost binds the Sandbox to the Docker host the manager talks to on
// its first pass, persisted before anything exists there (with the claim
// records, or by writeBinding), and afterwards checks
// that it is still that host. When it is not, or cannot be proven, the pass stops
// here: nothing is created, removed or judged for the Sandbox, and status says why.
func (r *Reconciler) bindHost(ctx context.Context, p *pass) (ctrl.Result, bool, error) {
	sb, before := p.sb, p.before
	current, err := r.currentHost(ctx, sb)
	bound := sb.Status.DockerHost
	switch {
	case err != nil:
		hostUnproven(sb, err, retryLater(ctx))
		return r.recalls.pace(ctx, sb, ctrl.Result{}), false, r.writeStatus(ctx, before, sb)
	case bound == nil:
		// Note: written with the pass's first status write, which comes before
		// anything is made on the host (writeBinding).
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
		return r.recalls.pace(ctx, sb, ctrl.Result{RequeueAfter: kit.Jitter(kit.HostRecheck)}), false, r.writeStatus(ctx, before, sb)
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

// writeBinding writes the pass's binding when no status write carried it yet:
// before anything is made on the host. It writes all the pass has set so far
// (its owner's verdict among it) as a patch from p.before, which becomes what
// it wrote: the pass's publish patches from there. When it fails, the members
// reserved for the Sandbox are removed, and nothing is published to its Secret.
//
// Note: the server's answer goes to a copy, never to sb: taken as the pass's
// own status, it dropped what the pass had set and not written yet (a Sandbox
// that waited Unschedulable published its first Ready without OwnerAlive).
// Only p.before's status moves; the version the write left is the pass's
// (kit.NoteWrite), which the publish's patch is conditional on.
func (r *Reconciler) writeBinding(ctx context.Context, p *pass) (ctrl.Result, bool, error) {
	if !bindingUnwritten(ctx) {
		return ctrl.Result{}, true, nil
	}
	if err := r.writeStatus(ctx, p.before, p.sb.DeepCopy()); err != nil {
		r.unreserve(ctx, p.creds.reserved)
		err = errors.Join(err, p.creds.made())
		p.creds = nil
		return ctrl.Result{}, false, err
	}
	p.sb.Status.DeepCopyInto(&p.before.Status)
	return ctrl.Result{}, true, nil
}
