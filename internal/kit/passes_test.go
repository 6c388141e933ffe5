package kit

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// testClock is a clock the test moves: the bound is judged by it, never by how
// fast a loaded machine runs the pass.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *testClock) advance(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

// Liveness fails only while a pass is stuck, never for a pass that fails.
func TestLivenessFailsOnAStuckPass(t *testing.T) {
	clock := &testClock{t: time.Now()}
	p := NewPasses()
	p.now = clock.now
	req := httptest.NewRequest("GET", "/healthz", nil)
	entered, release := make(chan struct{}), make(chan struct{})
	r := p.Wrap(reconcile.Func(func(context.Context, ctrl.Request) (ctrl.Result, error) {
		close(entered)
		<-release
		return ctrl.Result{}, nil
	}))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = r.Reconcile(context.Background(), ctrl.Request{})
	}()
	within(t, entered, "the pass to begin") // it is counted from here
	if err := p.Check(req); err != nil {
		t.Fatalf("a pass just begun: %v", err)
	}
	clock.advance(p.stuckAfter)
	if err := p.Check(req); err != nil {
		t.Fatalf("a pass at the bound, not past it: %v", err)
	}
	clock.advance(time.Second)
	if err := p.Check(req); err == nil {
		t.Error("a pass stuck past the bound: live")
	}
	close(release)
	within(t, done, "the pass to end")
	if err := p.Check(req); err != nil {
		t.Errorf("the pass ended: %v", err)
	}
}

// within waits for ch to close, with a deadline that holds on a loaded machine.
func within(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("waited a minute for %s", what)
	}
}
