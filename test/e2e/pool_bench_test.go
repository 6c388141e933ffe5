package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

var sandboxPools = schema.GroupVersionResource{Group: "sandbox.roboco.io", Version: "v1alpha1", Resource: "sandboxpools"}

// TestBenchPoolClaim measures a postgres+redis Sandbox served by warm pools (5
// members each, full before every claim, so each claim is a hit) on two clocks,
// the orchestrator's (client-go create → its watch sees Ready for the current
// generation) and kubectl's (apply → wait returns), and the same Sandbox cold
// (spec.pools.policy: Never) on the first clock; the three kinds of run are
// interleaved, SANDBOX_BENCH_CLAIMS (default 30) of each, each on a settled
// machine (the last run's refills and teardowns over). Claimed Sandboxes are
// kept until the end, so the pools' status.claimed tells a pass after each claim.
func TestBenchPoolClaim(t *testing.T) {
	benchClaims(t, "bench-claim", benchCount("SANDBOX_BENCH_CLAIMS", 30), true, "postgres", "redis")
}

// TestBenchPoolClaimMongo is TestBenchPoolClaim for a mongo Sandbox
// (SANDBOX_BENCH_MONGO_CLAIMS, default 10, of each kind; kubectl's clock aside).
func TestBenchPoolClaimMongo(t *testing.T) {
	benchClaims(t, "bench-claim-mongo", benchCount("SANDBOX_BENCH_MONGO_CLAIMS", 10), false, "mongo")
}

// benchClaims runs n claims of a Sandbox of engines from full pools of 5
// (client-go, and kubectl too when withKubectl), interleaved with n cold ones.
func benchClaims(t *testing.T, name string, n int, withKubectl bool, engines ...string) {
	testenv.BenchOnly(t)
	metrics := testenv.FreeAddr(t)
	startManager(t, "--metrics-bind-address", metrics)
	b := newPoolBench(t, name, 5, engines...)
	t.Logf("load average at start: %s", loadAvg())
	var warmGo, warmKubectl, cold []time.Duration
	services := "[{engine: " + strings.Join(engines, "}, {engine: ") + "}]"
	runs := []func(i int){
		func(i int) {
			warmGo = append(warmGo, b.createReady(b.sandbox(fmt.Sprintf("go-%d", i), false)))
			b.claimed++
		},
		func(i int) {
			name := fmt.Sprintf("cold-%d", i)
			cold = append(cold, b.createReady(b.sandbox(name, true)))
			b.deleteGone(name)
		},
	}
	if withKubectl {
		runs = append(runs, func(i int) {
			name := fmt.Sprintf("kc-%d", i)
			applyStart := time.Now()
			applyYAML(t, b.ns, sandboxYAML(name, name+"-"+runID, "{policy: None}", services))
			kubectl(t, "wait", "-n", b.ns, "--for=condition=Ready", "sandbox/"+name, "--timeout=180s")
			warmKubectl = append(warmKubectl, time.Since(applyStart))
			b.claimed++
		})
	}
	for i := range n {
		for k := range runs {
			b.waitFull(3 * time.Minute)
			settle(t, time.Minute)
			runs[(i+k)%len(runs)](i) // each kind goes first in turn
		}
	}
	b.waitFull(3 * time.Minute)
	hits, misses := b.claimResults()
	what := strings.Join(engines, "+")
	t.Logf("%s, %d runs of each kind interleaved (claims: %d hits, %d misses per engine), load average at end: %s", what, n, hits, misses, loadAvg())
	t.Logf("  warm, client-go create → watch sees Ready: %s", stats(warmGo))
	if withKubectl {
		t.Logf("  warm, kubectl apply → kubectl wait returns: %s", stats(warmKubectl))
	}
	t.Logf("  cold (policy Never), client-go create → watch sees Ready: %s", stats(cold))
	t.Logf("  cold / warm on the orchestrator's clock: p50 ×%.1f, p99 ×%.1f",
		testenv.Median(cold).Seconds()/testenv.Median(warmGo).Seconds(), slices.Max(cold).Seconds()/slices.Max(warmGo).Seconds())
	t.Logf("  the manager's sandbox_pool_claim_seconds (rename, a rotation where one is needed, inspect): %s", claimHistogram(t, metrics))
	t.Logf("  its Claimed events: %s; Warning events: %q", claimedEvents(t, b.ns), warnings(t, b.ns))
	t.Logf("  its status writes refused for a newer Sandbox: %s", statusConflicts(t, metrics))
}

// statusConflicts is the manager's sandbox_status_conflicts_total by
// outcome (none: no write was refused).
func statusConflicts(t *testing.T, addr string) string {
	var out []string
	for _, line := range strings.Split(metricsText(t, addr), "\n") {
		if strings.HasPrefix(line, "sandbox_status_conflicts_total{") {
			out = append(out, strings.TrimPrefix(line, "sandbox_status_conflicts_total"))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

func benchCount(env string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(env)); err == nil && n > 0 {
		return n
	}
	return def
}

func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }

// stats is p50 and p99 of ds; with fewer than 100 samples p99 is the worst.
func stats(ds []time.Duration) string {
	p99 := "p99 (the max of " + strconv.Itoa(len(ds)) + ")"
	if len(ds) >= 100 {
		s := slices.Sorted(slices.Values(ds))
		p99 = "p99 " + ms(s[len(s)*99/100])
	} else {
		p99 += " " + ms(slices.Max(ds))
	}
	return fmt.Sprintf("p50 %s, %s; all %v", ms(testenv.Median(ds)), p99, roundAll(ds))
}

func roundAll(ds []time.Duration) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = ms(d)
	}
	return out
}

// settle waits, up to limit, until the machine is quiet: under a quarter of
// its CPU time busy over a second (refills and teardowns of earlier rounds are
// over), so that a claim measures itself, not what came before it. It logs
// when it gives up; the load averages beside every figure tell the rest.
func settle(t *testing.T, limit time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); {
		if cpuBusy(time.Second) < 0.25 {
			return
		}
	}
	t.Logf("the machine did not settle within %s (load average %s)", limit, loadAvg())
}

// cpuBusy is the share of all CPUs' time not idle over window (/proc/stat).
func cpuBusy(window time.Duration) float64 {
	read := func() (busy, total float64) {
		b, _ := os.ReadFile("/proc/stat")
		line, _, _ := strings.Cut(string(b), "\n")
		for i, f := range strings.Fields(line)[1:] {
			v, _ := strconv.ParseFloat(f, 64)
			total += v
			if i != 3 && i != 4 { // idle, iowait
				busy += v
			}
		}
		return busy, total
	}
	b0, t0 := read()
	time.Sleep(window)
	b1, t1 := read()
	if t1 == t0 {
		return 0
	}
	return (b1 - b0) / (t1 - t0)
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// poolBench is a namespace with one pool per engine, and what has been claimed
// from each so far (every claim takes one member of each pool).
type poolBench struct {
	t        *testing.T
	env      *testenv.Env
	ns       string
	dyn      dynamic.Interface
	engines  []string
	replicas int64
	claimed  int64
	// started is when the last createReady created its Sandbox.
	started time.Time
}

// newPoolBench makes the namespace and its pools (named after their engines);
// its Sandboxes and pools are deleted when t ends, while the manager still runs.
func newPoolBench(t *testing.T, name string, replicas int, engines ...string) *poolBench {
	t.Helper()
	return poolBenchIn(t, env, newNamespace(t, name), replicas, engines...)
}

// poolBenchIn is newPoolBench in the namespace ns, made already, of the
// control plane e.
func poolBenchIn(t *testing.T, e *testenv.Env, ns string, replicas int, engines ...string) *poolBench {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", e.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 200, 400 // a burst's creates are not paced by the client
	b := &poolBench{t: t, env: e, ns: ns, dyn: dynamic.NewForConfigOrDie(cfg), engines: engines, replicas: int64(replicas)}
	for _, engine := range engines {
		pool := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "sandbox.roboco.io/v1alpha1", "kind": "SandboxPool",
			"metadata": map[string]any{"name": engine, "namespace": b.ns},
			"spec":     map[string]any{"replicas": int64(replicas), "service": map[string]any{"engine": engine}},
		}}
		if _, err := b.dyn.Resource(sandboxPools).Namespace(b.ns).Create(context.Background(), pool, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		e.MustKubectl(t, "delete", "-n", b.ns, "sandboxes", "--all", "--timeout=600s")
		e.MustKubectl(t, "delete", "-n", b.ns, "sandboxpools", "--all", "--timeout=300s")
	})
	return b
}

// full: every pool has a status written after the last claim (claimed counts it;
// b.claimed < 0 skips that) with all its members ready.
func (b *poolBench) full() bool {
	for _, e := range b.engines {
		p, err := b.dyn.Resource(sandboxPools).Namespace(b.ns).Get(context.Background(), e, metav1.GetOptions{})
		if err != nil {
			return false
		}
		gen, _, _ := unstructured.NestedInt64(p.Object, "status", "observedGeneration")
		claimed, _, _ := unstructured.NestedInt64(p.Object, "status", "claimed")
		ready, _, _ := unstructured.NestedInt64(p.Object, "status", "readyReplicas")
		replicas, _, _ := unstructured.NestedInt64(p.Object, "status", "replicas")
		if gen != p.GetGeneration() || (b.claimed >= 0 && claimed != b.claimed) || ready != b.replicas || replicas != b.replicas {
			return false
		}
	}
	return true
}

func (b *poolBench) waitFull(timeout time.Duration) {
	b.t.Helper()
	for deadline := time.Now().Add(timeout); !b.full(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.t.Fatalf("timed out after %s waiting for pools %v full, %d claimed:\n%s", timeout, b.engines, b.claimed,
				b.env.MustKubectl(b.t, "get", "sandboxpools", "-n", b.ns, "-o", "yaml"))
		}
	}
}

// sandbox is a Sandbox of every pool's engine, cold when told so.
func (b *poolBench) sandbox(name string, cold bool) *unstructured.Unstructured {
	var services []any
	for _, e := range b.engines {
		services = append(services, map[string]any{"engine": e})
	}
	spec := map[string]any{"agentID": name + "-" + runID, "owner": map[string]any{"policy": "None"}, "services": services}
	if cold {
		spec["pools"] = map[string]any{"policy": "Never"}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "sandbox.roboco.io/v1alpha1", "kind": "Sandbox",
		"metadata": map[string]any{"name": name, "namespace": b.ns}, "spec": spec,
	}}
}

// createReady creates sb as an orchestrator does and returns how long until its
// watch saw it Ready for its current generation.
func (b *poolBench) createReady(sb *unstructured.Unstructured) time.Duration {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res := b.dyn.Resource(sandboxes).Namespace(b.ns)
	w, err := res.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + sb.GetName()})
	if err != nil {
		b.t.Fatal(err)
	}
	defer w.Stop()
	b.started = time.Now()
	if _, err := res.Create(ctx, sb, metav1.CreateOptions{}); err != nil {
		b.t.Fatal(err)
	}
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			b.t.Fatalf("watching %s: %v", sb.GetName(), ev.Object)
		}
		if readyNow(ev.Object.(*unstructured.Unstructured)) {
			return time.Since(b.started)
		}
	}
	b.t.Fatalf("the watch of %s ended before it was Ready", sb.GetName())
	return 0
}

// readyNow: Ready=True, and status describes the current generation.
func readyNow(obj *unstructured.Unstructured) bool {
	gen, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	return gen == obj.GetGeneration() && isReady(obj)
}

// deleteGone deletes a Sandbox and waits until it is gone (torn down).
func (b *poolBench) deleteGone(name string) {
	b.t.Helper()
	res := b.dyn.Resource(sandboxes).Namespace(b.ns)
	if err := res.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		b.t.Fatal(err)
	}
	testenv.WaitFor(b.t, 2*time.Minute, 50*time.Millisecond, name+" gone", func() bool {
		_, err := res.Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// claimResults counts the namespace's Sandboxes whose every engine has a claim
// record (hits) and those with any engine served cold though it may claim.
func (b *poolBench) claimResults() (hits, misses int) {
	b.t.Helper()
	list, err := b.dyn.Resource(sandboxes).Namespace(b.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		b.t.Fatal(err)
	}
	for _, sb := range list.Items {
		if policy, _, _ := unstructured.NestedString(sb.Object, "spec", "pools", "policy"); policy == "Never" {
			continue
		}
		all := true
		for _, e := range b.engines {
			id, _, _ := unstructured.NestedString(sb.Object, "status", "claims", e, "containerID")
			all = all && id != ""
		}
		if all {
			hits++
		} else {
			misses++
		}
	}
	return hits, misses
}
