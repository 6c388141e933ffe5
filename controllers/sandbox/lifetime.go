package sandbox

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// lifetime is a pass's verdict on the Sandbox's life, reached before any Docker
// work for its services.
type lifetime struct {
	// ended: the Sandbox was deleted (ttl or owner gone); the pass provisions nothing.
	ended bool
	// ttlLeft and ownerLeft are how long until each deadline (0: none).
	ttlLeft, ownerLeft time.Duration
}

// reconcileLifetime deletes a Sandbox past its ttl or its owner's deadline, or says
// how long it has left.
func (r *Reconciler) reconcileLifetime(ctx context.Context, sb *sandboxv1.Sandbox) (lifetime, error) {
	expired, ttlLeft, err := r.reconcileTTL(ctx, sb)
	if err != nil || expired {
		return lifetime{ended: expired}, err
	}
	ownerLeft, gone, err := r.reconcileOwner(ctx, sb)
	return lifetime{ended: gone, ttlLeft: ttlLeft, ownerLeft: ownerLeft}, err
}

// reconcileTTL deletes a Sandbox past its ttl, or says how long it has left.
func (r *Reconciler) reconcileTTL(ctx context.Context, sb *sandboxv1.Sandbox) (expired bool, left time.Duration, err error) {
	if sb.Spec.TTL == nil {
		return false, 0, nil
	}
	left = sb.CreationTimestamp.Add(sb.Spec.TTL.Duration).Sub(r.now())
	if left > 0 {
		return false, left, nil
	}
	r.Recorder.Eventf(sb, nil, corev1.EventTypeNormal, sandboxv1.EventExpired, sandboxv1.ActionDelete,
		"ttl %s has passed since creation: deleting the Sandbox", sb.Spec.TTL.Duration)
	logf.FromContext(ctx).Info("Deleting expired Sandbox", "ttl", sb.Spec.TTL.Duration)
	uid := sb.UID
	if err := r.Delete(ctx, sb, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return false, 0, fmt.Errorf("deleting expired Sandbox: %w", err)
	}
	return true, 0, nil
}
