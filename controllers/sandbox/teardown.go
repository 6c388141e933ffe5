package sandbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/chaosplant"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
	"github.com/roboco-sandbox/sandbox-controller/internal/quota"
)

// Finalizer holds a Sandbox until its containers are confirmed gone.
const Finalizer = sandboxv1.SandboxFinalizer

// ensureFinalizer persists the finalizer before anything exists on the Docker
// host; the pass's status writes patch from the Sandbox it leaves.
func (r *Reconciler) ensureFinalizer(ctx context.Context, p *pass) (ctrl.Result, bool, error) {
	if err := kit.EnsureFinalizer(ctx, r.Client, p.sb, Finalizer); err != nil {
		return ctrl.Result{}, false, err
	}
	kit.NoteWrite(ctx, p.sb)
	p.before = p.sb.DeepCopy()
	return ctrl.Result{}, true, nil
}

// teardownHere begins the pass of a deleted Sandbox: it says so in Ready, and
// whether its containers are torn down here (teardownHost). Its own host tears
// them down; one an operator released lets go without; any other keeps it.
func (r *Reconciler) teardownHere(ctx context.Context, p *pass) (ctrl.Result, bool, error) {
	sb := p.sb
	if !controllerutil.ContainsFinalizer(sb, Finalizer) {
		return ctrl.Result{}, false, nil
	}
	// Note: a Sandbox deleted because its owner left keeps saying so while it goes.
	if c := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1.ConditionReady); c == nil || c.Reason != sandboxv1.ReasonOwnerGone {
		kit.SetCondition(sb, sandboxv1.ConditionReady, metav1.ConditionFalse, sandboxv1.ReasonDeleting, "tearing down the service containers")
	}
	proceed, released, result := r.teardownHost(ctx, sb)
	if err := r.writeStatus(ctx, p.before, sb); err != nil || !proceed && !released {
		return r.recalls.pace(ctx, sb, result), false, err
	}
	p.released = released
	return ctrl.Result{}, true, nil
}

// removeContainers tears the Sandbox's containers down and confirms they are
// gone (teardown), unless it was released.
func (r *Reconciler) removeContainers(ctx context.Context, p *pass) (ctrl.Result, bool, error) {
	if p.released {
		return ctrl.Result{}, true, nil
	}
	if n := r.Host.CancelCreates(string(p.sb.UID)); n > 0 {
		// Note: each end removes what it made, and wakes the Sandbox.
		logf.FromContext(ctx).Info("Teardown waits for the creates it cut short", "creates", n)
		return ctrl.Result{RequeueAfter: createPollInterval}, false, nil
	}
	removed, err := r.teardown(ctx, p.sb)
	if err != nil {
		err := r.teardownBlocked(ctx, p.sb, err) // before pace: it notes the failure
		return r.recalls.pace(ctx, p.sb, ctrl.Result{}), false, err
	}
	r.Recorder.Eventf(p.sb, nil, corev1.EventTypeNormal, sandboxv1.EventTornDown, sandboxv1.ActionTeardown, "removed %d containers with their volumes", removed)
	logf.FromContext(ctx).Info("Sandbox torn down", "containers", removed)
	return ctrl.Result{}, true, nil
}

// removeFinalizer lets the Sandbox go once nothing of it is left on its host:
// its Secret, then its quota's room (never before), then the finalizer.
func (r *Reconciler) removeFinalizer(ctx context.Context, p *pass) (ctrl.Result, bool, error) {
	sb := p.sb
	if err := deleteSecret(ctx, r.Client, r.APIReader, sb); err != nil {
		return ctrl.Result{}, false, err
	}
	if err := quota.Release(ctx, r.Client, r.APIReader, sb.Namespace, sb.UID); err != nil {
		return ctrl.Result{}, false, err
	}
	if err := kit.RemoveFinalizer(ctx, r.Client, sb, Finalizer); err != nil {
		return ctrl.Result{}, false, err
	}
	r.forget(types.NamespacedName{Namespace: sb.Namespace, Name: sb.Name})
	r.claims.Forget(sb.UID)
	r.holders.forget(sb.UID)
	r.releaseSeedLanes(sb)
	return ctrl.Result{}, true, nil
}

// teardownBlocked says what keeps a deleted Sandbox's finalizer (a container
// Docker would not remove, or Docker itself), on Reconciling and in a Warning once
// per stretch; the retry comes with the Sandbox's backoff.
func (r *Reconciler) teardownBlocked(ctx context.Context, sb *sandboxv1.Sandbox, err error) error {
	before := sb.DeepCopy()
	retryIn := retryLater(ctx)
	msg := fmt.Sprintf("teardown incomplete, the finalizer stays until every container is gone: %v; retrying in %s", err, retryIn.Round(time.Second))
	logf.FromContext(ctx).Info("Teardown incomplete; retrying", "error", err.Error(), "retryIn", retryIn)
	if c := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1.ConditionReconciling); c == nil || c.Reason != sandboxv1.ReasonTeardownBlocked {
		r.Recorder.Eventf(sb, nil, corev1.EventTypeWarning, sandboxv1.EventTeardownBlocked, sandboxv1.ActionTeardown, "%s", msg)
	}
	kit.SetCondition(sb, sandboxv1.ConditionReconciling, metav1.ConditionTrue, sandboxv1.ReasonTeardownBlocked, msg)
	return r.writeStatus(ctx, before, sb)
}

// deleteSecret deletes the credentials Secret when this Sandbox controls it.
// Note: the Secret is owned by the Sandbox, but we do not rely on the garbage
// collector alone: credentials should not outlive their containers.
func deleteSecret(ctx context.Context, c client.Client, api client.Reader, sb *sandboxv1.Sandbox) error {
	secret := &corev1.Secret{}
	if err := api.Get(ctx, types.NamespacedName{Namespace: sb.Namespace, Name: sandboxv1.SecretName(sb)}, secret); err != nil ||
		!metav1.IsControlledBy(secret, sb) {
		return nil
	}
	if err := c.Delete(ctx, secret); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting Secret: %w", err)
	}
	return nil
}

// teardown removes every container of the Sandbox (ours: its UID's and its claimed
// pool members; stop, kill, remove with volumes) in parallel, and lists again to
// confirm they are gone.
func (r *Reconciler) teardown(ctx context.Context, sb *sandboxv1.Sandbox) (int, error) {
	if err := r.plantedInitRead(ctx, sb); err != nil {
		return 0, err
	}
	cs, _, err := r.ours(ctx, sb, nil, nil)
	if err != nil {
		return 0, err
	}
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() {
			if err := r.Host.Remove(ctx, c.ID); err != nil {
				errs[i] = fmt.Errorf("removing %s: %w", c.Name, err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	left, _, err := r.ours(ctx, sb, nil, nil)
	if err != nil {
		return 0, err
	}
	if len(left) > 0 {
		return 0, fmt.Errorf("%d containers still present after removal", len(left))
	}
	return len(cs), nil
}

// plantedInitRead is the planted chaosplant.TeardownNeedsInit (nil in any
// other build): a teardown that reads the init scripts first.
func (r *Reconciler) plantedInitRead(ctx context.Context, sb *sandboxv1.Sandbox) error {
	if !chaosplant.Active(chaosplant.TeardownNeedsInit) {
		return nil
	}
	for _, svc := range sb.Spec.Services {
		if _, err := r.Class.Sandbox(ctx, sb, svc, ""); err != nil {
			return fmt.Errorf("reading %s's init scripts: %w", svc.Engine, err)
		}
	}
	return nil
}

// letGo is LetGo on this host's Sandbox, then forgets it.
func (r *Reconciler) letGo(ctx context.Context, sb *sandboxv1.Sandbox) error {
	if err := LetGo(ctx, r.Client, r.APIReader, r.Recorder, sb); err != nil {
		return err
	}
	r.forget(types.NamespacedName{Namespace: sb.Namespace, Name: sb.Name})
	r.claims.Forget(sb.UID)
	r.holders.forget(sb.UID)
	r.releaseSeedLanes(sb)
	return nil
}

// LetGo lets a deleted Sandbox bound to a DockerHost that no longer exists go
// at once: no manager reaches that host, so nothing there can be removed or
// confirmed gone, and waiting would hold it forever. It is mostly one that
// waited and made nothing (a host being deleted is kept until what was
// admitted onto it is gone). What its status records as made there is named
// in a Warning: the orphan sweep removes it should that host be registered
// again. Its Secret and its quota's room go with it.
func LetGo(ctx context.Context, c client.Client, api client.Reader, rec events.EventRecorder, sb *sandboxv1.Sandbox) error {
	if !controllerutil.ContainsFinalizer(sb, Finalizer) {
		return nil
	}
	if made := madeThere(sb); len(made) > 0 {
		rec.Eventf(sb, nil, corev1.EventTypeWarning, sandboxv1.EventDockerHostReleased, sandboxv1.ActionTeardown,
			"let go without teardown: its DockerHost %s was deleted, so the containers it made there (%s) are not removed; "+
				"the orphan sweep removes them should that host be registered again", sb.Spec.DockerHost, strings.Join(made, ", "))
		logf.FromContext(ctx).Info("Sandbox let go: its DockerHost was deleted", "dockerHost", sb.Spec.DockerHost, "containers", made)
	}
	if err := deleteSecret(ctx, c, api, sb); err != nil {
		return err
	}
	if err := quota.Release(ctx, c, api, sb.Namespace, sb.UID); err != nil {
		return err
	}
	return kit.RemoveFinalizer(ctx, c, sb, Finalizer)
}

// madeThere are the containers sb's status records (its services' and claimed
// members'), by short ID.
func madeThere(sb *sandboxv1.Sandbox) []string {
	var out []string
	for _, s := range sb.Status.Services {
		if s.ContainerID != "" {
			out = append(out, dd.ShortID(s.ContainerID))
		}
	}
	for _, c := range sb.Status.Claims {
		if id := dd.ShortID(c.ContainerID); !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
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
