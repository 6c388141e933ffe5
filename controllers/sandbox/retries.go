package sandbox

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
)

// retryLater notes that the pass met a failure a retry may fix, and returns when
// that retry comes (for messages).
func retryLater(ctx context.Context) time.Duration {
	p := passOf(ctx)
	if p == nil {
		return kit.RetryBackoff.Duration
	}
	p.failed.Store(true)
	return p.retryIn
}

// pace ends a pass: after a failure the Sandbox comes back after its backoff (or
// sooner, when a step asked for sooner), and the next failure waits longer; a pass
// without one resets the backoff, unless a service waited out its backoff in it
// (a failed create is not tried again sooner because a sibling asked for sooner).
//
// Note: this is the one retry mechanism of the Sandbox reconciler. The workqueue's
// own rate limiter only paces errors of the API server.
func (m *recalls) pace(ctx context.Context, sb *sandboxv1.Sandbox, result ctrl.Result) ctrl.Result {
	p := passOf(ctx)
	if p == nil {
		return result
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.of(sb)
	if !p.failed.Load() {
		if !p.waited.Load() {
			rec.failures = 0
		}
		return result
	}
	rec.failures++
	result.RequeueAfter = kit.Soonest(result.RequeueAfter, p.retryIn)
	return result
}
