package sandbox

import (
	"context"
	"time"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// createRetry is a service's failed create: no new one before at, unless the
// spec changed since (gen).
type createRetry struct {
	at  time.Time
	gen int64
	why part
}

// createFailed notes that a create of sb's engine failed; the next comes after
// the Sandbox's backoff (retryIn), however soon another service brings a pass.
func (m *recalls) createFailed(sb *sandboxv1.Sandbox, engine string, retryIn time.Duration, why part) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.of(sb).creates[engine] = createRetry{at: time.Now().Add(retryIn), gen: sb.Generation, why: why}
}

// createDone forgets a failed create of sb's engine: one succeeded.
func (m *recalls) createDone(sb *sandboxv1.Sandbox, engine string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.of(sb).creates, engine)
}

// retryNow lets every failed create go again at the next pass: the Docker
// daemon's event stream resynced, and what failed while it was away may work.
func (m *recalls) retryNow() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, rec := range m.sandboxes {
		clear(rec.creates)
	}
}

// createWait is how long a create of sb's engine still waits out its backoff,
// and why (0: it may go now).
func (m *recalls) createWait(sb *sandboxv1.Sandbox, engine string) (time.Duration, part) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cr, ok := m.of(sb).creates[engine]
	if !ok || cr.gen != sb.Generation {
		return 0, part{}
	}
	return time.Until(cr.at), cr.why
}

// waitOut notes that the pass left a retry to its backoff: unlike a pass
// without failure, it does not reset the backoff.
func waitOut(ctx context.Context) {
	if p := passOf(ctx); p != nil {
		p.waited.Store(true)
	}
}
