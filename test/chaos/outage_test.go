package chaos

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// idleDownBound bounds the Docker calls per idle Sandbox per minute once the
// daemon has been down for a while: each Sandbox retries on its own backoff (to
// 5 minutes), so the rate falls as the outage lasts.
const idleDownBound = 2.0

// TestChaosOutage measures what idle Sandboxes cost a Docker daemon that is down:
// the Docker calls per Sandbox, minute by minute (counted at the proxy, the
// event stream and pings aside), then that they are all Ready again once it is
// back. make chaos runs it (CHAOS_OUTAGE=4m).
func TestChaosOutage(t *testing.T) {
	outage, err := time.ParseDuration(os.Getenv("CHAOS_OUTAGE"))
	if err != nil || outage < time.Minute {
		t.Skip("set CHAOS_OUTAGE to a duration of a minute or more (make chaos)")
	}
	h := setup(t)
	s := settings{name: "outage", seed: seed(), minLive: 8, maxLive: 8, warmup: 15 * time.Second, bound: bound()}
	r := h.newRun(t, s)
	ctx := t.Context()
	// The warm-up alone: the workload makes its Sandboxes, all Ready, then stops.
	_ = r.execute(ctx)
	n := len(r.w.records())
	r.h.daemon.Stop()
	var rates []string
	var last float64
	for start := time.Now(); time.Since(start) < outage; {
		before, t0 := r.h.proxy.worked(), time.Now()
		sleep(ctx, time.Minute)
		last = float64(r.h.proxy.worked()-before) / time.Since(t0).Minutes() / float64(n)
		rates = append(rates, fmt.Sprintf("%.2f", last))
	}
	if err := r.h.daemon.Start(r.h.daemon.DataRoot); err != nil {
		t.Fatal(err)
	}
	r.h.startStoppedOwners(ctx)
	back := &cycle{n: 1, fault: faultDockerd, start: time.Now(), deletes: r.w.deletes(), cause: cause{all: true, sandboxes: map[string]bool{}, services: map[string]bool{}}}
	r.stats.injected[faultDockerd]++
	r.check(ctx, back)
	t.Logf("Docker calls per idle Sandbox per minute with the daemon down (%d Sandboxes, minute by minute): %s", n, strings.Join(rates, ", "))
	if rec := r.stats.recovery[faultDockerd]; len(rec) > 0 {
		t.Logf("all Ready again %s after the daemon came back", rec[0].Round(100*time.Millisecond))
	}
	for _, v := range r.violations {
		t.Errorf("%s", v)
	}
	if last > idleDownBound {
		t.Errorf("%.2f Docker calls per idle Sandbox per minute in the last minute of the outage, want at most %.1f", last, idleDownBound)
	}
}
