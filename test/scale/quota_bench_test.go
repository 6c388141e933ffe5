package scale

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// quotaSettings are the quota benchmark's knobs: SCALE_QUOTA_SANDBOXES (the
// burst, 1000), SCALE_QUOTA_HARD (its quota, 600), SCALE_QUOTA_FREED (deleted
// to admit as many waiting, 5), SCALE_QUOTA_HOSTS (10) and SCALE_QUOTA_MANAGERS
// (replicas, 1).
type quotaSettings struct {
	total, hard, freed, hosts, managers int
}

func quotaBenchSettings(t *testing.T) quotaSettings {
	t.Helper()
	s := quotaSettings{total: envInt(t, "SCALE_QUOTA_SANDBOXES", 1000), hard: envInt(t, "SCALE_QUOTA_HARD", 600),
		freed: envInt(t, "SCALE_QUOTA_FREED", 5), hosts: envInt(t, "SCALE_QUOTA_HOSTS", 10), managers: envInt(t, "SCALE_QUOTA_MANAGERS", 1)}
	if s.hard+s.freed > s.total {
		t.Fatalf("SCALE_QUOTA_HARD (%d) and SCALE_QUOTA_FREED (%d) leave no Sandbox waiting of %d", s.hard, s.freed, s.total)
	}
	return s
}

// Namespaces of the quota benchmark: the burst, and a small one for the size at rest.
const burstNS, smallNS = "quota-burst", "quota-small"

// TestBenchScaleQuota creates SCALE_QUOTA_SANDBOXES (1,000) redis Sandboxes at
// once in one namespace whose SandboxQuota admits SCALE_QUOTA_HARD (600), on
// fake hosts. Throughout, it samples how many of them the fake hosts hold live
// containers of and how many the quota counts used (every 100 ms), and follows
// every admission the Sandboxes' statuses record (a watch): the most of each
// at once, over hard, is the over-admission, which must be 0. It reports
// admissions per second (hard over the time from the first create to the
// hard-th admission). Then deleting a few admits as many waiting ones, the
// quota's used back at hard; raising hard admits the rest. The quota's size as
// the API server serves it, at rest, with 10 and with 1,000 admitted: within
// twice of each other (it holds aggregates, not one entry per object). Every
// Ready Sandbox records its admission in its status (status.admitted).
func TestBenchScaleQuota(t *testing.T) {
	testenv.BenchOnly(t)
	cfg := quotaBenchSettings(t)
	r := newRun(t, settings{hosts: cfg.hosts, window: time.Minute}, cfg.managers)
	t.Logf("%d manager(s), %d fake hosts; load average %s", cfg.managers, cfg.hosts, loadAvg())
	small := r.smallQuota(2 * cfg.total)

	createNamespace(t, r.c, burstNS)
	r.createQuota(burstNS, cfg.hard)
	peaks := r.samplePeaks(burstNS, cfg.hard)
	b := r.burst(cfg, peaks)
	restHard, _ := r.quotaAtRest(burstNS, cfg.hard, 2*time.Minute)
	mostAdmitted := r.tr.admissionsIn(burstNS).most
	r.freeSome(cfg)
	p := peaks.stop()

	r.setHard(burstNS, 2*cfg.total)
	raised := time.Now()
	createSandboxes(t, r.c, burstNS, cfg.total, cfg.total+cfg.freed) // 1,000 admitted, with the deleted ones replaced
	r.waitQuota(burstNS, cfg.total, 0, time.Duration(cfg.total)*time.Second)
	r.recorded(burstNS, "hard raised")
	rest, entries := r.quotaAtRest(burstNS, cfg.total, 2*time.Minute)
	t.Logf("hard raised to %d: the other %d admitted and Ready after %s", 2*cfg.total, cfg.total-cfg.hard,
		time.Since(raised).Round(time.Millisecond))
	r.noDuplicates("the quota benchmark")

	t.Logf("%d Sandboxes at once under sandboxes=%d: created in %s; %d with containers on the fake hosts after %s (%.1f admissions/s), recorded in their statuses after %s; all %d Ready after %s, the other %d QuotaExceeded",
		cfg.total, cfg.hard, b.created.Round(time.Millisecond), cfg.hard, b.admitted.Round(time.Millisecond),
		float64(cfg.hard)/b.admitted.Seconds(), b.recorded.Round(time.Millisecond), cfg.hard, b.ready.Round(time.Millisecond), cfg.total-cfg.hard)
	t.Logf("most at once (%d samples every 100 ms, %d failed; every admission the watch saw): %d Sandboxes with live containers (%d containers) on the fake hosts, %d used in the quota, %d Sandboxes recording an admission; over-admission %d",
		p.samples, p.failed, p.sandboxes, p.containers, p.used, mostAdmitted, max(p.sandboxes, p.containers, p.used, mostAdmitted)-cfg.hard)
	t.Logf("the quota's size as served (JSON): %d bytes with %d admitted, %d bytes with %d, %d bytes with %d (%d admissions in flight); ratio %d/%d: %.2f",
		small, 10, restHard, cfg.hard, rest, cfg.total, entries, cfg.total, 10, float64(rest)/float64(small))
	t.Logf("load average at end: %s", loadAvg())
	for what, n := range map[string]int{"Sandboxes with live containers": p.sandboxes, "containers": p.containers,
		"used in the quota": p.used, "Sandboxes recording an admission": mostAdmitted} {
		if n > cfg.hard {
			t.Errorf("over-admission: %d %s at once under sandboxes=%d", n, what, cfg.hard)
		}
	}
	if rest > 2*small {
		t.Errorf("the quota grows with its objects: %d bytes with %d admitted, %d with 10", rest, cfg.total, small)
	}
}

// smallQuota measures the size at rest of a quota of hard with 10 admitted.
func (r *run) smallQuota(hard int) int {
	r.t.Helper()
	createNamespace(r.t, r.c, smallNS)
	r.createQuota(smallNS, hard)
	createSandboxes(r.t, r.c, smallNS, 0, 10)
	r.waitQuota(smallNS, 10, 0, 2*time.Minute)
	r.recorded(smallNS, "10 Sandboxes")
	bytes, _ := r.quotaAtRest(smallNS, 10, 2*time.Minute)
	return bytes
}

// burstTimes are a burst's times from its first create.
type burstTimes struct {
	// admitted: the fake hosts held hard of them (sampled every 100 ms);
	// recorded: hard recorded their admission in status (0: never).
	created, admitted, recorded, ready time.Duration
}

// burst creates cfg.total Sandboxes at once under cfg.hard and waits until hard
// are admitted and Ready, the rest waiting QuotaExceeded.
func (r *run) burst(cfg quotaSettings, s *sampler) burstTimes {
	r.t.Helper()
	start := time.Now()
	createSandboxes(r.t, r.c, burstNS, 0, cfg.total)
	out := burstTimes{created: time.Since(start)}
	r.waitQuota(burstNS, cfg.hard, cfg.total-cfg.hard, time.Duration(cfg.total)*time.Second)
	out.ready = time.Since(start)
	// Note: the sampler's next look sees what waitQuota saw.
	testenv.WaitFor(r.t, 10*time.Second, 50*time.Millisecond, "the sampler to see hard", func() bool { return !s.peaks().reached.IsZero() })
	out.admitted = s.peaks().reached.Sub(start)
	if a := r.tr.admissionsIn(burstNS); len(a.reached) >= cfg.hard {
		out.recorded = a.reached[cfg.hard-1].Sub(start)
	}
	r.recorded(burstNS, "the burst")
	return out
}

// waitQuota waits until ns has want Sandboxes Ready with live containers on
// the fake hosts, and waiting ones Ready False QuotaExceeded; it logs progress
// every half minute. Whether the Ready ones record their admission in their
// status is checked apart (recorded).
func (r *run) waitQuota(ns string, want, waiting int, timeout time.Duration) {
	r.t.Helper()
	start := time.Now()
	nextLog := start.Add(30 * time.Second)
	for {
		ready, adm, exceeded := r.tr.inNamespace(ns, sandboxv1.ReasonQuotaExceeded)
		live := r.fake.live(r.t, ns)
		if ready == want && live.Sandboxes == want && exceeded == waiting {
			return
		}
		now := time.Now()
		if now.After(nextLog) || now.Sub(start) > timeout {
			msg := fmt.Sprintf("%s: %d Ready, %d with live containers, %d recording an admission, %d QuotaExceeded; want %d, %d waiting",
				ns, ready, live.Sandboxes, adm, exceeded, want, waiting)
			if now.Sub(start) > timeout {
				r.t.Logf("neither Ready nor waiting for quota: %v", r.tr.otherReasons(ns, sandboxv1.ReasonReady, sandboxv1.ReasonQuotaExceeded))
				r.t.Fatalf("after %s: %s", timeout, msg)
			}
			r.t.Logf("  %s: %s", now.Sub(start).Round(time.Second), msg)
			nextLog = now.Add(30 * time.Second)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// recorded fails the test when a Ready Sandbox of ns records no admission in
// its status (status.admitted: where its admitted amounts live, against which
// its growth is judged).
func (r *run) recorded(ns, when string) {
	r.t.Helper()
	if ready, adm, _ := r.tr.inNamespace(ns, ""); adm != ready {
		r.unadmitted(ns)
		r.t.Errorf("%s: %d of %d Ready Sandboxes record no status.admitted", when, ready-adm, ready)
	}
}

// freeSome deletes cfg.freed admitted Sandboxes and waits until as many
// waiting ones are admitted and Ready in their stead, and the quota counts
// hard again.
func (r *run) freeSome(cfg quotaSettings) {
	r.t.Helper()
	names := r.tr.admittedNames(burstNS)[:cfg.freed]
	start := time.Now()
	for _, name := range names {
		sb := &sandboxv1.Sandbox{}
		sb.Namespace, sb.Name = burstNS, name
		if err := r.c.Delete(r.t.Context(), sb); client.IgnoreNotFound(err) != nil {
			r.t.Fatal(err)
		}
	}
	r.waitQuota(burstNS, cfg.hard, cfg.total-cfg.hard-cfg.freed, 5*time.Minute)
	ready := time.Since(start)
	r.recorded(burstNS, "after the deletes")
	_, entries := r.quotaAtRest(burstNS, cfg.hard, 2*time.Minute)
	r.t.Logf("deleting %d admitted: %d waiting ones admitted and Ready in their stead after %s; the quota counts %d used again (%d admissions in flight)",
		cfg.freed, cfg.freed, ready.Round(time.Millisecond), cfg.hard, entries)
}

// unadmitted logs ns's Ready Sandboxes whose status records no admission (the
// first one whole), and its quota's status.
func (r *run) unadmitted(ns string) {
	r.t.Helper()
	var list sandboxv1.SandboxList
	if err := r.c.List(r.t.Context(), &list, client.InNamespace(ns)); err != nil {
		r.t.Fatal(err)
	}
	var names []string
	for i := range list.Items {
		sb := &list.Items[i]
		if sandboxv1.IsReady(sb) && sb.Status.Admitted == nil {
			if len(names) == 0 {
				b, _ := json.Marshal(sb.Status)
				r.t.Logf("Ready, no status.admitted: %s's status is %s", sb.Name, b)
			}
			names = append(names, sb.Name)
		}
	}
	q := r.quota(ns)
	r.t.Logf("Ready with no status.admitted: %v; the quota: %q, in flight %+v", names, q.Status.Summary, q.Status.Admitted)
}
