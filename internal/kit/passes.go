package kit

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// stuckAfter is how long one pass may run before the manager counts as wedged.
// Every Docker call has a deadline, so a pass adds up to a few minutes at worst
// against a daemon that never answers; one running longer is a bug of ours that a
// restart clears, while a Docker outage never fails liveness.
const stuckAfter = 10 * time.Minute

// Passes tracks the passes in flight, for the liveness check.
type Passes struct {
	stuckAfter time.Duration
	now        func() time.Time // the clock; a test's own in tests
	mu         sync.Mutex
	next       uint64
	running    map[uint64]time.Time
}

func NewPasses() *Passes {
	return &Passes{stuckAfter: stuckAfter, now: time.Now, running: map[uint64]time.Time{}}
}

// Wrap counts every pass of r.
func (p *Passes) Wrap(r reconcile.Reconciler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
		p.mu.Lock()
		id := p.next
		p.next++
		p.running[id] = p.now()
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			delete(p.running, id)
			p.mu.Unlock()
		}()
		return r.Reconcile(ctx, req)
	})
}

// Check is the /healthz check: it fails while a pass has run for longer than stuckAfter.
func (p *Passes) Check(*http.Request) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, started := range p.running {
		if ran := p.now().Sub(started); ran > p.stuckAfter {
			return fmt.Errorf("a Sandbox pass has run for %s (more than %s): the manager is wedged", ran.Round(time.Second), p.stuckAfter)
		}
	}
	return nil
}

// Observed tells observe the outcome of every pass of r (nil: r as it is).
func Observed(r reconcile.Reconciler, observe func(ctrl.Request, ctrl.Result, error)) reconcile.Reconciler {
	if observe == nil {
		return r
	}
	return reconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
		result, err := r.Reconcile(ctx, req)
		observe(req, result, err)
		return result, err
	})
}
