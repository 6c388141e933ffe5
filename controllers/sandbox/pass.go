package sandbox

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/controllers/sandbox/lifetime"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
)

// pass is one reconcile of one Sandbox: what its phases learned and hand on to
// the next. It is carried in its context too, so that any step can say it met
// a failure a retry may fix (retryLater), and what delay the retry will get.
type pass struct {
	// sb is the Sandbox as the pass changes it; before is the status its
	// writes patch from.
	sb, before *sandboxv1.Sandbox
	// life is the lifetime verdict: how long until each deadline.
	life lifetime.Verdict
	// alive: the Sandbox passed its gates (finalizer, binding, lifetime): what
	// the pass learns from there on is published, whatever ends it.
	alive bool
	// held is a refused growth (nil: none): what runs stays as it is.
	held *verdict
	// creds are the passwords and the Secret, once read or made (nil: not, or
	// not to be published to).
	creds *credentials
	// released: an operator let the deleted Sandbox go without teardown.
	released bool
	// result and err are what the phases said: when to come back, what failed.
	result ctrl.Result
	err    error

	failed  atomic.Bool
	retryIn time.Duration
	// unbound: the pass bound the Sandbox to its host, not yet written.
	unbound atomic.Bool
	// later is what waits for the pass's writes (events, pool refills), so that
	// it does not compete with them for the API server and the daemon.
	mu    sync.Mutex
	later []func()
}

type passKey struct{}

// startPass begins a pass over sb: its retry, should any step fail, comes after
// the Sandbox's backoff.
func (m *memory) startPass(ctx context.Context, sb *sandboxv1.Sandbox) (context.Context, *pass) {
	m.mu.Lock()
	failures := m.of(sb).failures
	m.mu.Unlock()
	p := &pass{sb: sb, before: sb.DeepCopy(), retryIn: kit.Jitter(host.Delay(kit.RetryBackoff, failures))}
	return context.WithValue(ctx, passKey{}, p), p
}

// passOf is the pass ctx carries (nil outside one).
func passOf(ctx context.Context) *pass {
	p, _ := ctx.Value(passKey{}).(*pass)
	return p
}

// afterPass runs f when the pass has written what it learned (at once outside a pass).
func afterPass(ctx context.Context, f func()) {
	p := passOf(ctx)
	if p == nil {
		f()
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.later = append(p.later, f)
}

// end runs what waited for the pass's writes.
func (p *pass) end() {
	p.mu.Lock()
	later := p.later
	p.later = nil
	p.mu.Unlock()
	for _, f := range later {
		f()
	}
}

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
// without one resets the backoff.
//
// Note: this is the one retry mechanism of the Sandbox reconciler. The workqueue's
// own rate limiter only paces errors of the API server.
func (m *memory) pace(ctx context.Context, sb *sandboxv1.Sandbox, result ctrl.Result) ctrl.Result {
	p := passOf(ctx)
	if p == nil {
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

// bindLater notes that the pass bound the Sandbox and has not written it yet.
func bindLater(ctx context.Context) {
	if p := passOf(ctx); p != nil {
		p.unbound.Store(true)
	}
}

// bindingUnwritten says whether the pass's binding waits for its first status
// write, and takes it as written (the caller writes it).
func bindingUnwritten(ctx context.Context) bool {
	p := passOf(ctx)
	return p != nil && p.unbound.Swap(false)
}

// credentials are a Sandbox's passwords by engine, and the Secret that holds them
// as it stands on the API server.
type credentials struct {
	passwords map[string]string
	secret    *corev1.Secret
	// reserved are the pool members whose own passwords the Secret was made
	// with this pass, by engine: their services claim them with a rename.
	reserved map[string]host.Member
	// pending, when set, ends with the create of the Secret, which runs
	// beside the reserved members' renames; made waits for it.
	pending chan error
	err     error
	// inSecret are the engines whose password was read from the Sandbox's
	// own Secret (controlled by its UID), not made or derived this pass: a
	// member answering to one was claimed by this Sandbox (see provenLost).
	inSecret map[string]bool
}

// made waits for the Secret's create when it runs beside the pass, and says
// whether the Secret was made (every later call says the same). Nothing is
// reported Ready, and the Secret is not published to, before it returns nil.
func (c *credentials) made() error {
	if c.pending != nil {
		c.err, c.pending = <-c.pending, nil
	}
	return c.err
}
