package kit_test

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
)

// After an API outage's worth of failed passes in a row, an object is retried
// within MaxErrorBackoff, not after controller-runtime's 1000s.
func TestRateLimiterCapsTheErrorBackoff(t *testing.T) {
	rl := kit.RateLimiter()
	req := reconcile.Request{}
	req.Name = "sbx"
	var last = rl.When(req)
	for range 40 {
		last = rl.When(req)
	}
	if last != kit.MaxErrorBackoff {
		t.Fatalf("after 40 failures in a row the next retry is in %s, want %s", last, kit.MaxErrorBackoff)
	}
	rl.Forget(req)
	if d := rl.When(req); d > kit.MaxErrorBackoff/100 {
		t.Fatalf("after a success the first retry is in %s, want the base delay", d)
	}
}
