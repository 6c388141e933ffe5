package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// TestBenchPoolBurst creates SANDBOX_BENCH_BURST (default 20) postgres+redis
// Sandboxes at once against pools of as many members (full): how long until all
// are Ready, then until the pools are full again (refills are bounded by
// --pool-refills, default 2); then the same burst cold (policy Never), same run.
// SANDBOX_BENCH_BURST_ENGINES="redis" bursts lighter Sandboxes.
func TestBenchPoolBurst(t *testing.T) {
	testenv.BenchOnly(t)
	n := benchCount("SANDBOX_BENCH_BURST", 50)
	engines := strings.Fields(os.Getenv("SANDBOX_BENCH_BURST_ENGINES"))
	if len(engines) == 0 {
		engines = []string{"postgres", "redis"}
	}
	metrics := testenv.FreeAddr(t)
	startManager(t, "--metrics-bind-address", metrics)
	b := newPoolBench(t, "bench-burst", n, engines...)
	b.waitFull(15 * time.Minute)
	settle(t, 3*time.Minute)
	t.Logf("load average before the warm burst: %s", loadAvg())
	work := readWork(t, metrics)
	warm, warmAll := b.burst("warm", n, false)
	t.Logf("the manager's passes during the warm burst (queue: waiting for a worker; pass: in one): %s", readWork(t, metrics).since(work))
	hits, misses := b.claimResults()
	// Note: logged now, so that a refill that never ends loses none of it.
	t.Logf("warm burst of %d (pools of %d, full; %d hits, %d misses): all Ready after %s; each %s (load average now: %s)",
		n, n, hits, misses, ms(warmAll), stats(warm), loadAvg())
	if dup := b.sharedContainers(); len(dup) > 0 {
		t.Errorf("containers serving more than one Sandbox: %v", dup)
	}
	b.claimed = int64(n)
	b.waitFull(15 * time.Minute)
	refill := time.Since(b.started)
	t.Logf("pools full again %s after the first create (load average now: %s)", ms(refill), loadAvg())
	kubectl(t, "delete", "-n", b.ns, "sandboxes", "--all", "--timeout=600s")
	b.claimed = -1 // the pools' claimed members went with their Sandboxes
	b.waitFull(15 * time.Minute)
	settle(t, 3*time.Minute)
	t.Logf("load average before the cold burst: %s", loadAvg())
	cold, coldAll := b.burst("cold", n, true)
	t.Logf("burst of %d %s Sandboxes created at once (load average at end: %s):", n, strings.Join(engines, "+"), loadAvg())
	t.Logf("  warm (pools of %d, full; %d hits, %d misses): all Ready after %s; each %s", n, hits, misses, ms(warmAll), stats(warm))
	t.Logf("  pools full again %s after the first create (%s after the last Ready)", ms(refill), ms(refill-warmAll))
	t.Logf("  cold (policy Never): all Ready after %s; each %s", ms(coldAll), stats(cold))
	t.Logf("  cold / warm, until all Ready: ×%.1f", coldAll.Seconds()/warmAll.Seconds())
}

// sharedContainers are the containers the status of more than one Sandbox of
// the namespace names.
func (b *poolBench) sharedContainers() []string {
	b.t.Helper()
	list, err := b.dyn.Resource(sandboxes).Namespace(b.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		b.t.Fatal(err)
	}
	seen, shared := map[string]string{}, []string{}
	for _, sb := range list.Items {
		services, _, _ := unstructured.NestedSlice(sb.Object, "status", "services")
		for _, s := range services {
			id, _, _ := unstructured.NestedString(s.(map[string]any), "containerID")
			if other, ok := seen[id]; ok && id != "" {
				shared = append(shared, id+" ("+other+", "+sb.GetName()+")")
			}
			seen[id] = sb.GetName()
		}
	}
	return shared
}

// burst creates n Sandboxes at once, one goroutine each, and returns how long
// each took to Ready (from its create) and how long until the last was (from the
// first create).
func (b *poolBench) burst(kind string, n int, cold bool) (each []time.Duration, all time.Duration) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	res := b.dyn.Resource(sandboxes).Namespace(b.ns)
	w, err := res.Watch(ctx, metav1.ListOptions{LabelSelector: "burst=" + kind})
	if err != nil {
		b.t.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	started := map[string]time.Time{}
	errs := make(chan error, n)
	b.started = time.Now()
	for i := range n {
		sb := b.sandbox(fmt.Sprintf("%s-%d", kind, i), cold)
		sb.SetLabels(map[string]string{"burst": kind})
		go func() {
			at := time.Now()
			_, err := res.Create(ctx, sb, metav1.CreateOptions{})
			mu.Lock()
			started[sb.GetName()] = at
			mu.Unlock()
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			b.t.Fatal(err)
		}
	}
	ready := map[string]time.Duration{}
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			b.t.Fatalf("watching the burst: %v", ev.Object)
		}
		sb := ev.Object.(*unstructured.Unstructured)
		if _, done := ready[sb.GetName()]; !done && readyNow(sb) {
			ready[sb.GetName()] = time.Since(started[sb.GetName()])
			each = append(each, ready[sb.GetName()])
			if len(ready) == n {
				return each, time.Since(b.started)
			}
		}
	}
	b.t.Fatalf("the watch ended with %d of %d Ready", len(ready), n)
	return nil, 0
}

// TestBenchPoolIdle measures what full, idle pools cost: the manager's CPU and
// resident memory over a minute and its Docker requests (counted at a proxy, its
// --docker-host), first without pools, then with pools of 10 members per engine
// (postgres, redis, mongo), same run; and each idle member's memory and CPU
// (docker stats). The manager runs with the default --sweep-interval (60s).
func TestBenchPoolIdle(t *testing.T) {
	testenv.BenchOnly(t)
	const window = time.Minute
	calls := testenv.CountDockerCalls(t, dockerDaemon())
	m := startManager(t, "--docker-host", calls.Host, "--sweep-interval", "60s")
	time.Sleep(5 * time.Second)
	t.Logf("load average at start: %s", loadAvg())
	calls.Reset()
	baseCPU, baseRSS := idle(t, m, window)
	base := calls.Snapshot()

	// Note: one pool at a time, so each fills without the others' boots and probes.
	engines := []string{"postgres", "redis", "mongo"}
	var fills []string
	for _, e := range engines {
		start := time.Now()
		newPoolBench(t, "bench-idle-"+e, 10, e).waitFull(8 * time.Minute)
		fills = append(fills, fmt.Sprintf("%s %s", e, ms(time.Since(start))))
	}
	time.Sleep(5 * time.Second)
	calls.Reset()
	cpu, rss := idle(t, m, window)
	got := calls.Snapshot()
	t.Logf("manager idle over %s (pools of 10 filled one after the other in %s; load average at end: %s):", window, strings.Join(fills, ", "), loadAvg())
	t.Logf("  no pool: %.2f%% CPU, %.1f MiB RSS, %d Docker requests: %s", baseCPU, baseRSS, base.Total(), base.Per(1))
	t.Logf("  3 full pools of 10 (30 members): %.2f%% CPU, %.1f MiB RSS (+%.1f MiB), %d Docker requests: %s",
		cpu, rss, rss-baseRSS, got.Total(), got.Per(1))
	for _, e := range engines {
		t.Logf("  an idle %s member (docker stats of 10): %s", e, memberStats(t, e))
	}
}

func dockerDaemon() string {
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		return h
	}
	return "unix:///var/run/docker.sock"
}

// memberStats is docker stats of this run's unclaimed members of engine: median
// and max memory, median CPU.
func memberStats(t *testing.T, engine string) string {
	t.Helper()
	ids := dockerPS(t, "sandbox.roboco.io/instance="+instance, "sandbox.roboco.io/engine="+engine, "sandbox.roboco.io/member")
	out, err := exec.Command("docker", append([]string{"stats", "--no-stream", "--format", "{{.MemUsage}} {{.CPUPerc}}"}, ids...)...).Output()
	if err != nil {
		t.Fatalf("docker stats: %v", err)
	}
	var mem, cpu []float64
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line) // "29.5MiB / 512MiB 0.01%"
		if len(f) != 4 {
			t.Fatalf("docker stats line %q", line)
		}
		mem = append(mem, mebibytes(t, f[0]))
		c, _ := strconv.ParseFloat(strings.TrimSuffix(f[3], "%"), 64)
		cpu = append(cpu, c)
	}
	slices.Sort(mem)
	slices.Sort(cpu)
	return fmt.Sprintf("memory median %.1f MiB, max %.1f MiB; CPU median %.2f%%", mem[len(mem)/2], mem[len(mem)-1], cpu[len(cpu)/2])
}

func mebibytes(t *testing.T, s string) float64 {
	t.Helper()
	for _, u := range []struct {
		suffix string
		scale  float64
	}{{"KiB", 1.0 / 1024}, {"MiB", 1}, {"GiB", 1024}, {"B", 1.0 / (1 << 20)}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				return f * u.scale
			}
		}
	}
	t.Fatalf("docker stats memory %q", s)
	return 0
}
