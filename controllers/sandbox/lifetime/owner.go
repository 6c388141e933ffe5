package lifetime

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
)

// gracePeriod is how long the owner may be missing before the Sandbox goes.
func (j Judge) gracePeriod(sb *sandboxv1.Sandbox) time.Duration {
	if sb.Spec.Owner != nil && sb.Spec.Owner.GracePeriod != nil && sb.Spec.Owner.GracePeriod.Duration > 0 {
		return sb.Spec.Owner.GracePeriod.Duration
	}
	return j.Options.GracePeriod
}

// ownerDeadline is when a Sandbox whose owner went missing at since is deleted:
// the owner must have been gone for the grace period, and the Sandbox must be older
// than it (an agent that creates its Sandbox before its own container runs is not
// punished for it).
func ownerDeadline(sb *sandboxv1.Sandbox, since time.Time, grace time.Duration) time.Time {
	deadline := since.Add(grace)
	if created := sb.CreationTimestamp.Add(grace); created.After(deadline) {
		deadline = created
	}
	return deadline
}

// owner follows the owner container: OwnerAlive and status.ownerMissingSince
// say whether it runs, and once it has been missing for the grace period the Sandbox
// is deleted (the finalizer tears down). It returns how long until that deadline
// while the owner is missing, and whether it deleted the Sandbox.
//
// Note: the decision reads only persisted times (ownerMissingSince and
// creationTimestamp, both whole seconds), so a controller restarted inside the
// window neither restarts nor shortens it. ownerMissingSince is the first
// observation rounded up to the second; observations come from Docker events, so it
// lags the owner's end by milliseconds. It inspects the owner afresh in the same
// pass as any deletion: a missed "start" event cannot get a live owner's Sandbox
// deleted.
func (j Judge) owner(ctx context.Context, sb *sandboxv1.Sandbox) (requeueAfter time.Duration, deleted bool, err error) {
	name, tracked := j.Options.TrackedOwner(sb)
	if !tracked {
		sb.Status.OwnerMissingSince = nil
		kit.SetCondition(sb, sandboxv1.ConditionOwnerAlive, metav1.ConditionTrue, sandboxv1.ReasonNoOwner,
			"owner tracking is off (spec.owner.policy None): only deletion or the ttl end this Sandbox")
		return 0, false, nil
	}
	log := logf.FromContext(ctx).WithValues("owner", name)

	owner, err := j.Driver.Inspect(ctx, name)
	switch {
	case err == nil && owner.State.Alive():
		if since := sb.Status.OwnerMissingSince; since != nil {
			j.Recorder.Eventf(sb, nil, corev1.EventTypeNormal, sandboxv1.EventOwnerBack, sandboxv1.ActionReconcile,
				"owner container %s runs again after %s missing", name, j.now().Sub(since.Time).Round(time.Second))
			log.Info("Owner container runs again", "missingSince", since.Time)
		}
		sb.Status.OwnerMissingSince = nil
		kit.SetCondition(sb, sandboxv1.ConditionOwnerAlive, metav1.ConditionTrue, aliveReason(owner.State),
			fmt.Sprintf("owner container %s is %s", name, owner.State))
		return 0, false, nil
	case err != nil && !errors.Is(err, dd.ErrNotFound):
		// Note: an unanswered inspect says nothing about the owner; concluding it is
		// missing would start (or end) a window on Docker's health, not the agent's.
		kit.SetCondition(sb, sandboxv1.ConditionOwnerAlive, metav1.ConditionUnknown, sandboxv1.ReasonDockerUnavailable,
			fmt.Sprintf("cannot inspect owner container %s: %v; retrying in %s", name, err, j.RetryIn(ctx).Round(time.Second)))
		return 0, false, nil
	}

	now, grace := j.now(), j.gracePeriod(sb)
	j.markMissing(ctx, sb, name, ownerState(owner, err), now)
	if !ownerDeadline(sb, sb.Status.OwnerMissingSince.Time, grace).After(now) {
		if err := j.confirmWindow(ctx, sb, name, ownerState(owner, err), now); err != nil {
			return 0, false, err
		}
	}
	since := sb.Status.OwnerMissingSince.Time
	deadline := ownerDeadline(sb, since, grace)
	kit.SetCondition(sb, sandboxv1.ConditionOwnerAlive, metav1.ConditionFalse, sandboxv1.ReasonMissing,
		fmt.Sprintf("owner container %s is %s since %s; the Sandbox is deleted at %s unless it runs again",
			name, ownerState(owner, err), since.UTC().Format(time.RFC3339), deadline.UTC().Format(time.RFC3339)))
	if left := deadline.Sub(now); left > 0 {
		return left, false, nil
	}

	msg := fmt.Sprintf("owner container %s has been %s since %s (grace period %s): deleting the Sandbox",
		name, ownerState(owner, err), since.UTC().Format(time.RFC3339), grace)
	deleted, derr := j.deleteForGoneOwner(ctx, sb, msg)
	if deleted {
		log.Info("Deleting the Sandbox: owner gone", "missingSince", since, "gracePeriod", grace,
			"late", now.Sub(deadline).Round(time.Millisecond))
	}
	return 0, deleted, derr
}

// markMissing opens the owner's window when none is open.
func (j Judge) markMissing(ctx context.Context, sb *sandboxv1.Sandbox, name, state string, now time.Time) {
	if sb.Status.OwnerMissingSince != nil {
		return
	}
	sb.Status.OwnerMissingSince = &metav1.Time{Time: ceilSecond(now)}
	j.Recorder.Eventf(sb, nil, corev1.EventTypeWarning, sandboxv1.EventOwnerMissing, sandboxv1.ActionReconcile,
		"owner container %s is %s; the Sandbox is deleted if it stays so for %s", name, state, j.gracePeriod(sb))
	logf.FromContext(ctx).Info("Owner container missing", "owner", name, "state", state, "gracePeriod", j.gracePeriod(sb))
}

// confirmWindow replaces the window read from the cache by the one persisted on the
// API server before a deletion is decided on it.
//
// Note: the cache may still hold a window the owner has since ended (it came back,
// the window was cleared, and it left again): judged on that, the Sandbox would go
// at once instead of after a new grace period.
func (j Judge) confirmWindow(ctx context.Context, sb *sandboxv1.Sandbox, name, state string, now time.Time) error {
	fresh := &sandboxv1.Sandbox{}
	if err := j.API.Get(ctx, client.ObjectKeyFromObject(sb), fresh); err != nil {
		return fmt.Errorf("reading the owner's window before deleting: %w", err)
	}
	sb.Status.OwnerMissingSince = fresh.Status.OwnerMissingSince
	j.markMissing(ctx, sb, name, state, now)
	return nil
}

// deleteForGoneOwner deletes the Sandbox (this UID only) and says why in Ready.
func (j Judge) deleteForGoneOwner(ctx context.Context, sb *sandboxv1.Sandbox, msg string) (bool, error) {
	kit.SetCondition(sb, sandboxv1.ConditionReady, metav1.ConditionFalse, sandboxv1.ReasonOwnerGone, msg)
	uid := sb.UID
	if err := j.Client.Delete(ctx, sb, client.Preconditions{UID: &uid}); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return true, nil // already gone, or another object by that name now
		}
		return false, fmt.Errorf("deleting the Sandbox of a gone owner: %w", err)
	}
	j.Recorder.Eventf(sb, nil, corev1.EventTypeNormal, sandboxv1.EventOwnerGone, sandboxv1.ActionDelete, "%s", msg)
	j.OwnerGone.Inc()
	return true, nil
}

// ceilSecond rounds t up to a whole second, the precision of a persisted metav1.Time:
// rounding down would cut the grace period short by up to a second.
func ceilSecond(t time.Time) time.Time {
	if r := t.Truncate(time.Second); r.Before(t) {
		return r.Add(time.Second)
	}
	return t
}

// aliveReason is OwnerAlive's reason for a live owner: Paused for a frozen one.
func aliveReason(s dd.State) string {
	if s == dd.StatePaused {
		return sandboxv1.ReasonPaused
	}
	return sandboxv1.ReasonRunning
}

// ownerState says in words what became of the owner.
func ownerState(owner dd.Container, inspectErr error) string {
	if inspectErr != nil {
		return "not found"
	}
	if owner.State == dd.StateExited || owner.State == dd.StateDead {
		return fmt.Sprintf("%s (exit code %d)", owner.State, owner.ExitCode)
	}
	return string(owner.State)
}

// WithOwnerDeadline folds the owner's deadline into a pass's result.
//
// Note: a terminal error ends retries, which would also drop the deadline and let
// a stalled Sandbox outlive its owner; its stall is already in status and events, so
// the deadline wins.
func WithOwnerDeadline(result ctrl.Result, err error, ownerLeft time.Duration) (ctrl.Result, error) {
	if ownerLeft <= 0 {
		return result, err
	}
	if err != nil && !errors.Is(err, reconcile.TerminalError(nil)) {
		return result, err // retried with backoff, which is sooner than any deadline that matters
	}
	if err != nil {
		return ctrl.Result{RequeueAfter: ownerLeft}, nil
	}
	result.RequeueAfter = kit.Soonest(result.RequeueAfter, ownerLeft)
	return result, nil
}
