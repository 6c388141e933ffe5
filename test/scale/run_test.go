package scale

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/roboco-sandbox/sandbox-controller/controllers"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// namespace holds the Sandboxes; leases the managers' election.
const namespace, leases = "scale", "scale-system"

// run is one fleet under test: a control plane of its own, the fake hosts, the
// managers, and a watch on the Sandboxes.
type run struct {
	t       *testing.T
	cfg     settings
	c       client.Client
	rest    *rest.Config
	fake    *fakeHosts
	ms      *managers
	tr      *tracker
	logDir  string
	created int
}

// newRun starts a control plane, cfg.hosts fake hosts registered as DockerHosts,
// and n managers (electing a leader when more than one).
func newRun(t *testing.T, cfg settings, n int) *run {
	t.Helper()
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	r := &run{t: t, cfg: cfg, rest: rest.CopyConfig(env.Config)}
	r.rest.QPS = -1 // the benchmark's own creates are not what is measured: no client-side limit
	if r.c, err = client.New(r.rest, client.Options{Scheme: controllers.NewScheme()}); err != nil {
		t.Fatal(err)
	}
	r.logDir = logDir(t)
	createNamespace(t, r.c, namespace)
	createNamespace(t, r.c, leases)
	r.fake = startFakeHosts(t, r.logDir, cfg.hosts)
	r.ms = &managers{t: t, logDir: r.logDir, kubeconfig: env.Kubeconfig(), instance: "scale-" + randomHex()}
	if n > 1 {
		r.ms.leaseNamespace = leases
	}
	r.ms.start(n)
	registerHosts(t, r.c, r.fake.endpoints)
	r.tr = track(t, r.rest)
	return r
}

// logDir keeps the processes' logs: removed when the test passes, named in the
// output when it fails.
func logDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sandbox-scale-logs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("SCALE_KEEP_LOGS") == "1" {
			t.Logf("logs kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	return dir
}

func randomHex() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// waitReady waits until target Sandboxes are Ready, logging progress every
// half minute, and fails after timeout.
func (r *run) waitReady(target int, timeout time.Duration) {
	r.t.Helper()
	start := time.Now()
	nextLog := start.Add(30 * time.Second)
	for r.tr.readyCount() < target {
		now := time.Now()
		if now.After(nextLog) {
			least, most, unplaced := r.tr.spread(r.cfg.hosts)
			r.t.Logf("  %s: %d/%d Ready; unplaced %d, per host %d..%d", now.Sub(start).Round(time.Second),
				r.tr.readyCount(), target, unplaced, least, most)
			nextLog = now.Add(30 * time.Second)
		}
		if now.Sub(start) > timeout {
			r.t.Fatalf("after %s: %d of %d Sandboxes Ready", timeout, r.tr.readyCount(), target)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// noDuplicates fails the test when a fake host counted a duplicate create: two
// live containers for one Sandbox service.
func (r *run) noDuplicates(when string) {
	r.t.Helper()
	sum := r.fake.fakeStats(r.t)
	if sum.Duplicates == 0 {
		return
	}
	for _, h := range sum.Hosts {
		for _, d := range h.DuplicateList {
			r.t.Logf("duplicate on %s: %s beside %s (%v)", h.Name, d.Name, d.Beside, d.Labels)
		}
	}
	r.t.Errorf("%s: %d duplicate creates, want none", when, sum.Duplicates)
}

// idle is what the fleet costs at rest, measured over one window.
type idle struct {
	apiPerSec, dockerPerSec, cpuPercent float64
	apiByVerb, dockerByEndpoint         string
	rssEach                             []float64
	rssTotal, heapMiB                   float64
}

// idle measures the managers at rest over r.cfg.window: API requests (their
// own client's count), Docker requests (the fake's count), CPU, and then
// resident memory and Go heap in use.
func (r *run) idle() idle {
	r.t.Helper()
	w := r.cfg.window.Seconds()
	m0, f0, cpu0 := r.ms.scrape(), r.fake.fakeStats(r.t), r.ms.cpuSeconds()
	time.Sleep(r.cfg.window)
	m1, f1, cpu1 := r.ms.scrape(), r.fake.fakeStats(r.t), r.ms.cpuSeconds()
	var out idle
	out.apiPerSec = (sum(m1, "rest_client_requests_total") - sum(m0, "rest_client_requests_total")) / w
	out.apiByVerb = perEndpoint(intCounts(byLabel(m0, "rest_client_requests_total", "method")),
		intCounts(byLabel(m1, "rest_client_requests_total", "method")), w)
	out.dockerPerSec = float64(requests(f1)-requests(f0)) / w
	out.dockerByEndpoint = perEndpoint(f0.Requests, f1.Requests, w)
	out.cpuPercent = 100 * (cpu1 - cpu0) / w
	out.rssEach, out.rssTotal = r.ms.rssMiB()
	out.heapMiB = sum(m1, "go_memstats_heap_inuse_bytes") / (1 << 20)
	return out
}

func intCounts(m map[string]float64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = int64(v)
	}
	return out
}

func (i idle) String() string {
	return fmt.Sprintf("API %.1f req/s (%s); Docker %.1f req/s (%s); CPU %.1f%%; RSS %.0f MiB %v; heap in use %.0f MiB",
		i.apiPerSec, i.apiByVerb, i.dockerPerSec, i.dockerByEndpoint, i.cpuPercent, i.rssTotal, rounded(i.rssEach), i.heapMiB)
}

func rounded(fs []float64) []int {
	out := make([]int, len(fs))
	for i, f := range fs {
		out[i] = int(f + 0.5)
	}
	return out
}
