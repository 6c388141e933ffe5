package sandbox

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
)

// memory is what the reconciler keeps of each Sandbox between passes, in memory
// only: how many passes in a row failed (the backoff's step) and how its probes
// went. A restarted manager starts afresh: the first retry comes at once, and a
// probe's deadline counts from its first attempt after the restart.
type memory struct {
	mu        sync.Mutex
	sandboxes map[types.NamespacedName]*recall
}

// recall is the memory of one Sandbox (of one UID: a Sandbox made again under the
// same name starts afresh).
type recall struct {
	uid      types.UID
	failures int
	// probes are the looks at each service's current container, by engine.
	probes map[string]*probeAttempts
	// aside are the failed removals of containers Docker could not remove, by ID.
	aside map[string]*asideRetry
	// secretTried: a pass tried to make its Secret (see neverMade).
	secretTried bool
	// written is the Sandbox as the last pass that wrote it left it.
	written *sandboxv1.Sandbox
}

func newMemory() *memory { return &memory{sandboxes: map[types.NamespacedName]*recall{}} }

// of returns sb's memory. Callers hold m.mu.
func (m *memory) of(sb *sandboxv1.Sandbox) *recall {
	key := types.NamespacedName{Namespace: sb.Namespace, Name: sb.Name}
	rec, ok := m.sandboxes[key]
	if !ok || rec.uid != sb.UID {
		rec = &recall{uid: sb.UID, probes: map[string]*probeAttempts{}, aside: map[string]*asideRetry{}}
		m.sandboxes[key] = rec
	}
	return rec
}

// forget drops the memory of a Sandbox that is gone.
func (m *memory) forget(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sandboxes, key)
}

// reset drops the memory of every Sandbox: the host was given up.
func (m *memory) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.sandboxes)
}

// pass is one reconcile of one Sandbox, carried in its context, so that any step
// can say it met a failure a retry may fix (retryLater) and what delay the retry
// will get.
type pass struct {
	failed  atomic.Bool
	retryIn time.Duration
	// unbound: the pass bound the Sandbox to its host, not yet written.
	unbound atomic.Bool
	// later is what waits for the pass's writes (events, pool refills), so that
	// it does not compete with them for the API server and the daemon.
	mu    sync.Mutex
	later []func()
}

// afterPass runs f when the pass has written what it learned (at once outside a pass).
func afterPass(ctx context.Context, f func()) {
	p, ok := ctx.Value(passKey{}).(*pass)
	if !ok {
		f()
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.later = append(p.later, f)
}

// endPass runs what waited for the pass's writes.
func endPass(ctx context.Context) {
	p, ok := ctx.Value(passKey{}).(*pass)
	if !ok {
		return
	}
	p.mu.Lock()
	later := p.later
	p.later = nil
	p.mu.Unlock()
	for _, f := range later {
		f()
	}
}

type passKey struct{}

// startPass begins a pass over sb: its retry, should any step fail, comes after
// the Sandbox's backoff.
func (m *memory) startPass(ctx context.Context, sb *sandboxv1.Sandbox) context.Context {
	m.mu.Lock()
	failures := m.of(sb).failures
	m.mu.Unlock()
	return context.WithValue(ctx, passKey{}, &pass{retryIn: kit.Jitter(host.Delay(kit.RetryBackoff, failures))})
}

// retryLater notes that the pass met a failure a retry may fix, and returns when
// that retry comes (for messages).
func retryLater(ctx context.Context) time.Duration {
	p, ok := ctx.Value(passKey{}).(*pass)
	if !ok {
		return kit.RetryBackoff.Duration
	}
	p.failed.Store(true)
	return p.retryIn
}

// pace ends a pass: after a failure the Sandbox comes back after its backoff (or
// sooner, when a step asked for sooner), and the next failure waits longer; a pass
// without one resets the backoff.
//
// Note: this is the one retry mechanism of the Sandbox reconciler. The workqueue's
// own rate limiter only paces errors of the API server.
func (m *memory) pace(ctx context.Context, sb *sandboxv1.Sandbox, result ctrl.Result) ctrl.Result {
	p, ok := ctx.Value(passKey{}).(*pass)
	if !ok {
		return result
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.of(sb)
	if !p.failed.Load() {
		rec.failures = 0
		return result
	}
	rec.failures++
	result.RequeueAfter = kit.Soonest(result.RequeueAfter, p.retryIn)
	return result
}

// secretTried notes that a pass tries to make sb's Secret.
func (m *memory) secretTried(sb *sandboxv1.Sandbox) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.of(sb).secretTried = true
}

func (m *memory) triedSecret(sb *sandboxv1.Sandbox) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.of(sb).secretTried
}
