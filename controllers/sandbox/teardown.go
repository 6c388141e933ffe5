package sandbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
	"github.com/roboco-sandbox/sandbox-controller/internal/quota"
)

// reconcileDelete tears down by UID label on the Sandbox's Docker host, confirms
// nothing is left, then lets go (see teardownHost for another host).
func (r *Reconciler) reconcileDelete(ctx context.Context, sb *sandboxv1.Sandbox) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(sb, Finalizer) {
		return ctrl.Result{}, nil
	}
	before := sb.DeepCopy()
	// Note: a Sandbox deleted because its owner left keeps saying so while it goes.
	if c := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1.ConditionReady); c == nil || c.Reason != sandboxv1.ReasonOwnerGone {
		kit.SetCondition(sb, sandboxv1.ConditionReady, metav1.ConditionFalse, sandboxv1.ReasonDeleting, "tearing down the service containers")
	}
	proceed, released, result := r.teardownHost(ctx, sb)
	if err := r.writeStatus(ctx, before, sb); err != nil || !proceed && !released {
		return r.memory.pace(ctx, sb, result), err
	}
	if proceed {
		removed, err := r.teardown(ctx, sb)
		if err != nil {
			err := r.teardownBlocked(ctx, sb, err) // before pace: it notes the failure
			return r.memory.pace(ctx, sb, ctrl.Result{}), err
		}
		r.Recorder.Eventf(sb, nil, corev1.EventTypeNormal, sandboxv1.EventTornDown, sandboxv1.ActionTeardown, "removed %d containers with their volumes", removed)
		logf.FromContext(ctx).Info("Sandbox torn down", "containers", removed)
	}
	if err := deleteSecret(ctx, r.Client, r.APIReader, sb); err != nil {
		return ctrl.Result{}, err
	}
	// Note: its quota's room frees once nothing of it is left, never before.
	if err := quota.Release(ctx, r.Client, r.APIReader, sb.Namespace, sb.UID); err != nil {
		return ctrl.Result{}, err
	}

	if err := kit.RemoveFinalizer(ctx, r.Client, sb, Finalizer); err != nil {
		return ctrl.Result{}, err
	}
	r.forget(types.NamespacedName{Namespace: sb.Namespace, Name: sb.Name})
	r.claims.Forget(sb.UID)
	return ctrl.Result{}, nil
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
