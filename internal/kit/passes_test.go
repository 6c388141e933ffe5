package kit

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Liveness fails only while a pass is stuck, never for a pass that fails.
func TestLivenessFailsOnAStuckPass(t *testing.T) {
	p := NewPasses()
	p.stuckAfter = 50 * time.Millisecond
	req := httptest.NewRequest("GET", "/healthz", nil)
	release := make(chan struct{})
	r := p.Wrap(reconcile.Func(func(context.Context, ctrl.Request) (ctrl.Result, error) {
		<-release
		return ctrl.Result{}, nil
	}))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = r.Reconcile(context.Background(), ctrl.Request{})
	}()
	if err := p.Check(req); err != nil {
		t.Fatalf("a pass just begun: %v", err)
	}
	time.Sleep(100 * time.Millisecond)
	if err := p.Check(req); err == nil {
		t.Error("a pass stuck past the bound: live")
	}
	close(release)
	<-done
	if err := p.Check(req); err != nil {
		t.Errorf("the pass ended: %v", err)
	}
}
