package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// The load of TestBenchSeedsRunning: seedLanes seeds of 5 × 60 s running (the
// host's lanes, all of one namespace's), the rest of seededSandboxes waiting.
const (
	seedLanes       = 4
	seededSandboxes = 32
	slowScripts     = 5
)

// TestBenchSeedsRunning measures what seeds running beside the pass cost the
// other Sandboxes of the host, on the orchestrator's clock (client-go create →
// its watch sees Ready): a cold postgres+redis Sandbox and a claim from
// postgres and redis pools (3 each, full before each run), SANDBOX_BENCH_SEEDS_RUNNING
// (default 7) runs of each per phase, interleaved, in three phases of one run:
// no seed (baseline), then seedLanes seeds of 5 minutes running and the rest of
// 32 seeded Sandboxes waiting for a lane (loaded), then, once all 32 are
// deleted mid-seed (timed), no seed again. It reports p50 per phase, loaded /
// baseline (target ≤ ×1.2), and each controller's pass duration p99 from the
// manager's histogram over each phase (target ≤ 1 s).
func TestBenchSeedsRunning(t *testing.T) {
	testenv.BenchOnly(t)
	n := benchCount("SANDBOX_BENCH_SEEDS_RUNNING", 7)
	tr, traceArgs := newSeedsTrace(t)
	metrics := testenv.FreeAddr(t)
	// Note: every lane to the one namespace of seeds, and each script within its timeout.
	m := startManager(t, append([]string{"--metrics-bind-address", metrics, "--seed-lanes", strconv.Itoa(seedLanes),
		"--seed-lanes-per-namespace", strconv.Itoa(seedLanes), "--init-script-timeout", "2m"}, traceArgs...)...)
	if tr != nil {
		tr.m = m
	}
	b := newPoolBench(t, "bench-seeds-running", 3, "postgres", "redis")
	load := newSeedLoad(t, b)
	t.Logf("load average at start: %s", loadAvg())
	b.waitFull(5 * time.Minute)

	phase := func(name string, between func()) runPhase {
		p := runPhase{name: name, before: readPasses(t, metrics), work: readWork(t, metrics)}
		from, probes := time.Now(), counterSum(t, metrics, "sandbox_probe_attempts_total")
		tr.begin()
		for i := range n {
			for k := range 2 {
				b.waitFull(3 * time.Minute)
				p.settled += settled(15 * time.Second)
				if (i+k)%2 == 0 { // each kind goes first in turn
					p.claim = append(p.claim, b.claimOnce(fmt.Sprintf("%s-claim-%d", name, i)))
				} else {
					p.cold = append(p.cold, b.coldOnce(fmt.Sprintf("%s-cold-%d", name, i)))
				}
				if between != nil {
					between()
				}
			}
		}
		p.passes = passesSince(p.before, readPasses(t, metrics))
		p.queue = readWork(t, metrics).since(p.work)
		p.load = loadAvg()
		p.took = time.Since(from)
		p.probes = perSecond(counterSum(t, metrics, "sandbox_probe_attempts_total")-probes, p.took)
		tr.end(name, from)
		return p
	}
	base1 := phase("base1", nil)
	startedIn := load.start()
	atStart := load.count()
	loaded := phase("loaded", load.check)
	atEnd := load.count()
	gone, containersGone := load.deleteAll()
	base2 := phase("base2", nil)

	t.Logf("%d runs of each kind per phase, interleaved; %d seeds of %d × 60 s at once (--seed-lanes %d), the rest of %d waiting",
		n, seedLanes, slowScripts, seedLanes, seededSandboxes)
	t.Logf("  the %d seeded Sandboxes: all at their lane or waiting for one in %s; at the loaded phase's start %s, at its end %s; its checks saw %s",
		seededSandboxes, ms(startedIn), atStart, atEnd, load.seen())
	t.Logf("  deleting all %d (mid-seed or waiting): objects gone in %s, their containers in %s", seededSandboxes, ms(gone), ms(containersGone))
	for _, p := range []runPhase{base1, loaded, base2} {
		t.Logf("  %-6s (load average at end %s; settled before %d of %d runs):", p.name, p.load, p.settled, 2*n)
		t.Logf("    claim from pools: %s", stats(p.claim))
		t.Logf("    cold:             %s", stats(p.cold))
	}
	ratio := func(what string, loaded, base1, base2 []time.Duration) {
		med := func(ds []time.Duration) float64 { return testenv.Median(ds).Seconds() }
		both := med(append(append([]time.Duration{}, base1...), base2...))
		t.Logf("  %s, loaded / baseline p50: ×%.2f (target ≤ ×1.20; against base1 ×%.2f, base2 ×%.2f)",
			what, med(loaded)/both, med(loaded)/med(base1), med(loaded)/med(base2))
	}
	ratio("claim", loaded.claim, base1.claim, base2.claim)
	ratio("cold ", loaded.cold, base1.cold, base2.cold)
	for _, p := range []runPhase{base1, loaded, base2} {
		t.Logf("  pass duration over %s (controller_runtime_reconcile_time_seconds, two scrapes' difference):", p.name)
		for _, l := range passReport(p.passes) {
			t.Logf("    %s", l)
		}
		t.Logf("    queue waits and passes: %s", p.queue)
		t.Logf("    readiness probes run (sandbox_probe_attempts_total) over its %s: %s", p.took.Round(time.Second), p.probes)
	}
}

// runPhase is one phase's runs and what the manager's metrics said of it.
type runPhase struct {
	name        string
	claim, cold []time.Duration
	settled     int
	before      passHistogram
	work        workMeans
	passes      []passQuantile
	queue, load string
	took        time.Duration
	probes      string
}

// settled waits, up to limit, for a quiet machine as settle does, and says
// whether it came (1) or not (0), quietly: under load it seldom does.
func settled(limit time.Duration) int {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); {
		if cpuBusy(time.Second) < 0.25 {
			return 1
		}
	}
	return 0
}

// claimOnce claims a postgres+redis Sandbox from the pools, checks that both
// services were claimed, and returns its create → Ready. It is kept until the
// end: the pools' status.claimed, the count of their claimed members, tells a
// pass after each claim (a member's removal brings the pool no pass).
func (b *poolBench) claimOnce(name string) time.Duration {
	b.t.Helper()
	took := b.createReady(b.sandbox(name, false))
	b.claimed++
	sb, err := b.dyn.Resource(sandboxes).Namespace(b.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		b.t.Fatal(err)
	}
	for _, e := range b.engines {
		if id, _, _ := unstructured.NestedString(sb.Object, "status", "claims", e, "containerID"); id == "" {
			b.t.Fatalf("%s was not served from the %s pool (a miss): its claims are %v", name, e, sb.Object["status"].(map[string]any)["claims"])
		}
	}
	return took
}

// coldOnce makes a cold postgres+redis Sandbox, deletes it, and returns its
// create → Ready.
func (b *poolBench) coldOnce(name string) time.Duration {
	b.t.Helper()
	took := b.createReady(b.sandbox(name, true))
	b.deleteGone(name)
	return took
}

// seedLoad is a namespace of seededSandboxes postgres Sandboxes, each seeded
// by slowScripts scripts of a minute each.
type seedLoad struct {
	t   *testing.T
	b   *poolBench
	ns  string
	min seedCount // the fewest running seen by check, and the most ended
	max seedCount
}

// seedCount is the seeded Sandboxes by where their seed is.
type seedCount struct{ running, waiting, ready, other int }

func (c seedCount) String() string {
	return fmt.Sprintf("%d running, %d waiting, %d seeded (Ready), %d other", c.running, c.waiting, c.ready, c.other)
}

func newSeedLoad(t *testing.T, b *poolBench) *seedLoad {
	t.Helper()
	s := &seedLoad{t: t, b: b, ns: newNamespace(t, "bench-seeds-load"), min: seedCount{running: seededSandboxes}}
	var data strings.Builder
	for i := range slowScripts {
		fmt.Fprintf(&data, "  %d-sleep.sql: SELECT pg_sleep(60);\n", 10*(i+1))
	}
	applyYAML(t, s.ns, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: slow}\ndata:\n"+data.String())
	t.Cleanup(func() { env.MustKubectl(t, "delete", "-n", s.ns, "sandboxes", "--all", "--timeout=600s") })
	return s
}

// start creates the seeded Sandboxes at once (cold: no pool serves them) and
// waits until seedLanes seeds run and the rest wait for a lane; it returns how
// long that took.
func (s *seedLoad) start() time.Duration {
	s.t.Helper()
	res := s.b.dyn.Resource(sandboxes).Namespace(s.ns)
	begin := time.Now()
	for i := range seededSandboxes {
		name := fmt.Sprintf("seeded-%d", i)
		sb := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "sandbox.roboco.io/v1alpha1", "kind": "Sandbox",
			"metadata": map[string]any{"name": name, "namespace": s.ns},
			"spec": map[string]any{"agentID": name + "-" + runID, "owner": map[string]any{"policy": "None"},
				"pools": map[string]any{"policy": "Never"},
				"services": []any{map[string]any{"engine": "postgres",
					"init": map[string]any{"configMapRef": map[string]any{"name": "slow"}}}}},
		}}
		if _, err := res.Create(context.Background(), sb, metav1.CreateOptions{}); err != nil {
			s.t.Fatal(err)
		}
	}
	// Note: seeds that ended already (Ready) count, on a machine that took minutes.
	testenv.WaitFor(s.t, 10*time.Minute, time.Second, "the seeds at their lanes, the rest waiting", func() bool {
		c := s.count()
		return c.running == seedLanes && c.running+c.waiting+c.ready == seededSandboxes
	})
	return time.Since(begin)
}

// count reads where each seeded Sandbox is, from its ServicesReady condition.
func (s *seedLoad) count() seedCount {
	s.t.Helper()
	list, err := s.b.dyn.Resource(sandboxes).Namespace(s.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	var c seedCount
	for _, sb := range list.Items {
		reason, msg := servicesReadyOf(&sb)
		switch {
		case isReady(&sb):
			c.ready++
		case reason == "Seeding" && strings.Contains(msg, "waiting for a seed lane"):
			c.waiting++
		case reason == "Seeding":
			c.running++
		default:
			c.other++
		}
	}
	return c
}

// check records the load between runs: the seeds must keep every lane busy.
func (s *seedLoad) check() {
	c := s.count()
	s.min.running = min(s.min.running, c.running)
	s.max.running = max(s.max.running, c.running)
	s.max.ready = max(s.max.ready, c.ready)
}

func (s *seedLoad) seen() string {
	return fmt.Sprintf("%d to %d running, up to %d seeded", s.min.running, s.max.running, s.max.ready)
}

// deleteAll deletes every seeded Sandbox at once and returns how long until
// the objects were gone, and until their containers were.
func (s *seedLoad) deleteAll() (gone, containersGone time.Duration) {
	s.t.Helper()
	res := s.b.dyn.Resource(sandboxes).Namespace(s.ns)
	begin := time.Now()
	if err := res.DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		s.t.Fatal(err)
	}
	testenv.WaitFor(s.t, 10*time.Minute, 200*time.Millisecond, "the seeded Sandboxes gone", func() bool {
		list, err := res.List(context.Background(), metav1.ListOptions{})
		return err == nil && len(list.Items) == 0
	})
	gone = time.Since(begin)
	testenv.WaitFor(s.t, 5*time.Minute, 200*time.Millisecond, "the seeded Sandboxes' containers gone", func() bool {
		return len(dockerPS(s.t, "sandbox.roboco.io/namespace="+s.ns)) == 0
	})
	return gone, time.Since(begin)
}

// servicesReadyOf is the reason and message of a Sandbox's ServicesReady condition.
func servicesReadyOf(sb *unstructured.Unstructured) (reason, message string) {
	conds, _, _ := unstructured.NestedSlice(sb.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "ServicesReady" {
			reason, _ = m["reason"].(string)
			message, _ = m["message"].(string)
		}
	}
	return reason, message
}
