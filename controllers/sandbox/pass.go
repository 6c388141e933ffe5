package sandbox

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

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
	// waited: a service waits out its backoff (createWait) this pass.
	waited atomic.Bool
	// unbound: the pass bound the Sandbox to its host, not yet written.
	unbound atomic.Bool
	// later is what waits for the pass's writes (events, pool refills), so that
	// it does not compete with them for the API server and the daemon.
	mu    sync.Mutex
	later []func()
	// seen is what the server holds as the pass knows it: its status writes
	// are conditional on it (patchStatus).
	seen seen
}

type passKey struct{}

// startPass begins a pass over sb: its retry, should any step fail, comes after
// the Sandbox's backoff.
func (m *recalls) startPass(ctx context.Context, sb *sandboxv1.Sandbox) (context.Context, *pass) {
	m.mu.Lock()
	failures := m.of(sb).failures
	m.mu.Unlock()
	p := &pass{sb: sb, before: sb.DeepCopy(), retryIn: kit.Jitter(host.Delay(kit.RetryBackoff, failures))}
	p.seen = seen{rv: sb.ResourceVersion, status: *sb.Status.DeepCopy()}
	ctx = kit.WithWrites(ctx, p.wrote)
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
