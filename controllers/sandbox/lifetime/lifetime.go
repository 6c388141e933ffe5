// Package lifetime is a pass's verdict on a Sandbox's life: past its ttl, or
// once its owner container has been gone for the grace period, it is deleted
// (its finalizer tears it down); otherwise it says how long each has left.
package lifetime

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/options"
)

// Judge reaches the verdict, before any Docker work for the Sandbox's services.
type Judge struct {
	// Client deletes the Sandbox; API reads the owner's window around the cache.
	Client   client.Client
	API      client.Reader
	Driver   dd.Driver
	Recorder events.EventRecorder
	Options  options.Options
	// Now is the API server's clock, which ttl and the owner's window are
	// judged on (nil: this process's own).
	Now func() time.Time
	// RetryIn notes that the pass met a failure a retry may fix, and says when
	// that retry comes.
	RetryIn func(context.Context) time.Duration
	// OwnerGone counts the Sandboxes deleted for their owner.
	OwnerGone prometheus.Counter
}

// Verdict is what the Judge says of a Sandbox's life.
type Verdict struct {
	// Ended: the Sandbox was deleted (ttl or owner gone); the pass provisions nothing.
	Ended bool
	// TTLLeft and OwnerLeft are how long until each deadline (0: none).
	TTLLeft, OwnerLeft time.Duration
}

// Of deletes a Sandbox past its ttl or its owner's deadline, or says how long
// it has left.
func (j Judge) Of(ctx context.Context, sb *sandboxv1.Sandbox) (Verdict, error) {
	expired, ttlLeft, err := j.ttl(ctx, sb)
	if err != nil || expired {
		return Verdict{Ended: expired}, err
	}
	ownerLeft, gone, err := j.owner(ctx, sb)
	return Verdict{Ended: gone, TTLLeft: ttlLeft, OwnerLeft: ownerLeft}, err
}

// ttl deletes a Sandbox past its ttl, or says how long it has left.
func (j Judge) ttl(ctx context.Context, sb *sandboxv1.Sandbox) (expired bool, left time.Duration, err error) {
	if sb.Spec.TTL == nil {
		return false, 0, nil
	}
	left = sb.CreationTimestamp.Add(sb.Spec.TTL.Duration).Sub(j.now())
	if left > 0 {
		return false, left, nil
	}
	j.Recorder.Eventf(sb, nil, corev1.EventTypeNormal, sandboxv1.EventExpired, sandboxv1.ActionDelete,
		"ttl %s has passed since creation: deleting the Sandbox", sb.Spec.TTL.Duration)
	logf.FromContext(ctx).Info("Deleting expired Sandbox", "ttl", sb.Spec.TTL.Duration)
	uid := sb.UID
	if err := j.Client.Delete(ctx, sb, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return false, 0, fmt.Errorf("deleting expired Sandbox: %w", err)
	}
	return true, 0, nil
}

// now is the API server's time: the clock persisted times were written on.
func (j Judge) now() time.Time {
	if j.Now == nil {
		return time.Now()
	}
	return j.Now()
}
