package sweep

import (
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

func TestSweepPlanConsider(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	const grace = time.Minute
	for _, tc := range []struct {
		name          string
		created, gone time.Duration // before now; gone: since the owner (or Sandbox) went
		wait          time.Duration // 0: reaped in this pass
	}{
		{"old container, owner long gone", time.Hour, time.Hour, 0},
		{"listed exactly grace old: may be a second younger", grace, time.Hour, listSlack},
		{"grace plus the listing's second old", grace + listSlack, time.Hour, 0},
		{"young container of a Sandbox already gone", 10 * time.Second, 10 * time.Second, grace - 10*time.Second + listSlack},
		{"old container whose owner just went", time.Hour, 20 * time.Second, grace - 20*time.Second},
		{"owner gone exactly grace ago", time.Hour, grace, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := sweepPlan{now: now, grace: grace}
			c := dd.ContainerSummary{ID: "c1", CreatedAt: now.Add(-tc.created)}
			p.consider(c, orphanLegacy, now.Add(-tc.gone))
			if tc.wait == 0 {
				if len(p.reap) != 1 || p.waiting != 0 || p.next != 0 {
					t.Fatalf("want it reaped now; plan reaps %d, waits for %d (next in %s)", len(p.reap), p.waiting, p.next)
				}
				if o := p.reap[0]; o.ID != "c1" || o.kind != orphanLegacy || o.age != tc.created {
					t.Errorf("reaps %+v, want c1 (%s) aged %s", o, orphanLegacy, tc.created)
				}
				return
			}
			if len(p.reap) != 0 || p.waiting != 1 || p.next != tc.wait {
				t.Errorf("plan reaps %d, waits for %d, next in %s; want it kept and looked at again in %s", len(p.reap), p.waiting, p.next, tc.wait)
			}
		})
	}
}

// TestSweepPlanNextIsTheSoonest: the sweep comes back when the first waiting
// container comes of age, not the last, and not for those it reaps now.
func TestSweepPlanNextIsTheSoonest(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	p := sweepPlan{now: now, grace: time.Minute}
	for i, gone := range []time.Duration{30 * time.Second, time.Hour, 50 * time.Second, 10 * time.Second} {
		c := dd.ContainerSummary{ID: string(rune('a' + i)), CreatedAt: now.Add(-time.Hour)}
		p.consider(c, orphanUID, now.Add(-gone))
	}
	if p.waiting != 3 || len(p.reap) != 1 || p.reap[0].ID != "b" {
		t.Errorf("waits for %d, reaps %+v; want 3 waiting and b reaped", p.waiting, p.reap)
	}
	if p.next != 10*time.Second {
		t.Errorf("next pass in %s, want 10s (the container whose owner went 50s ago)", p.next)
	}
}
