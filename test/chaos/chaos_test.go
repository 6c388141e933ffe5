// Package chaos runs the built manager against a Docker daemon of its own and a
// real API server while creating and deleting Sandboxes and injecting faults at
// random (seeded): SIGKILL of the manager, a restart of dockerd, a Docker API that
// stalls or drops connections, a restart of the API server, Secrets deleted,
// service containers removed out of band, and, once Sandboxes are bound to a
// proven Docker host, another host behind the manager's socket. After each fault
// it checks the invariants (invariants_test.go).
//
//	CHAOS_CYCLES=130 go test ./test/chaos -run TestChaos$ -v   # make chaos
//	CHAOS_PLANTED=1 go test ./test/chaos -run TestChaosPlanted  # make chaos-planted
//
// CHAOS_SEED replays a run's choices (the seed is printed first); timing is the
// machine's own, so a replay injects the same faults in the same order on the
// same targets, not at the same instants.
package chaos

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/chaosplant"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

const testLabel = "sandbox.roboco.io/test"

// TestChaos is the chaos run: CHAOS_CYCLES fault cycles (make test runs a short
// one, make chaos a long one); it fails naming each invariant violated.
func TestChaos(t *testing.T) {
	cycles, err := strconv.Atoi(os.Getenv("CHAOS_CYCLES"))
	if err != nil || cycles <= 0 {
		t.Skip("set CHAOS_CYCLES (make test runs a short run, make chaos a long one)")
	}
	// Note: beside the tenant run, each on daemons and a control plane of its own.
	t.Parallel()
	h := setup(t)
	long := cycles >= 50
	faults := allFaults()
	if only := os.Getenv("CHAOS_FAULTS"); only != "" {
		faults = strings.Split(only, ",")
	}
	// Note: a short run keeps half a long run's Sandboxes: every path still runs
	// each cycle, with half the postgres initdbs at once when a fault recreates
	// them all (a 2-core machine beside a build took over 5 minutes for 8).
	minLive, maxLive := 4, 6
	if long {
		minLive, maxLive = 8, 12
	}
	s := settings{name: "chaos", cycles: cycles, seed: seed(), faults: faults,
		minLive: minLive, maxLive: maxLive, mongo: long, pools: true, replicas: 2, warmup: 15 * time.Second, bound: bound()}
	r := h.newRun(t, s)
	vs := r.execute(t.Context())
	r.report()
	for _, v := range vs {
		t.Errorf("%s", v)
	}
	if len(vs) > 0 || t.Failed() {
		t.Logf("seed %d (replay: CHAOS_SEED=%d CHAOS_CYCLES=%d); manager log (last 40 lines):\n%s", s.seed, s.seed, cycles, r.mgr.tail(40))
		h.reportBusyMounts(t)
	}
	for kind := range slices.Values(s.faults) {
		if long && len(vs) == 0 && r.stats.injected[kind] < 10 && os.Getenv("CHAOS_FAULTS") == "" {
			t.Errorf("%s injected %d times, want at least 10 in a long run", kind, r.stats.injected[kind])
		}
	}
}

// TestChaosPlanted shows that the suite can fail: each planted bug, built into the
// manager with the chaos_plant tag, is caught, by the invariant it breaks.
func TestChaosPlanted(t *testing.T) {
	if os.Getenv("CHAOS_PLANTED") != "1" {
		t.Skip("set CHAOS_PLANTED=1 (make chaos-planted, or make chaos)")
	}
	h := setup(t)
	cases := []struct {
		bug, fault string
		invariants []string // any of them catches it
		warmup     time.Duration
		pools      bool
		replicas   int
		cycles     int // 3 when 0
	}{
		// The sweep's list of Sandboxes fails while the API server is down;
		// every container older than the grace period is then reaped.
		{bug: chaosplant.SweepAfterFailedList, fault: faultAPIServer, invariants: []string{invReplaced}, warmup: gracePeriod + 5*time.Second},
		{bug: chaosplant.PasswordOnRestart, fault: faultManagerKill, invariants: []string{invPassword}, warmup: 10 * time.Second},
		{bug: chaosplant.IdentitySkipped, fault: faultHostSwap, invariants: []string{invForeign}, warmup: 10 * time.Second},
		// Claimed members carry their pool's labels: to a sweep that reads no
		// claim, each is an orphan once older than the grace period. The claims
		// are seen at the warm-up's check, and the edits go on past the grace.
		{bug: chaosplant.SweepIgnoresClaims, fault: faultUpdate, invariants: []string{invReplaced, invData, invMemberLeak},
			warmup: 15 * time.Second, pools: true, cycles: 25},
		{bug: chaosplant.IdentityKeptOnRedial, fault: faultEndpoint, invariants: []string{invForeign, invWrongHost}, warmup: 10 * time.Second},
		{bug: chaosplant.WarmKeptOnLeaseLoss, fault: faultLease, invariants: []string{invShared, invReplaced, invTwo},
			warmup: 20 * time.Second, pools: true, replicas: 2},
	}
	for _, c := range cases {
		t.Run(c.bug, func(t *testing.T) {
			if c.fault == faultHostSwap && !hostIdentitySupported() {
				t.Skip("the manager does not bind Sandboxes to a Docker host yet (no status.dockerHost)")
			}
			s := settings{name: "plant-" + c.bug, cycles: cmp.Or(c.cycles, 3), seed: seed(), faults: []string{c.fault}, plant: c.bug,
				minLive: 8, maxLive: 10, warmup: c.warmup, bound: bound(), pools: c.pools, replicas: c.replicas, stopOn: c.invariants}
			r := h.newRun(t, s)
			// Note: this run is meant to break invariants; its report is the test.
			vs := r.execute(t.Context())
			var caught []string
			for _, v := range vs {
				if slices.Contains(c.invariants, v.invariant) {
					caught = append(caught, v.String())
				}
			}
			if len(caught) == 0 {
				t.Errorf("planted bug %s not caught: no violation of %q in %d cycles of %s (violations: %v); seed %d",
					c.bug, c.invariants, s.cycles, c.fault, vs, s.seed)
				return
			}
			t.Logf("planted bug %s caught: %s", c.bug, caught[0])
		})
	}
}

// bound is how long Sandboxes may take to be Ready again after a fault:
// CHAOS_BOUND, default 5 minutes (a busy 2-core machine takes over a minute for
// one postgres initdb when several start at once).
func bound() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("CHAOS_BOUND")); err == nil {
		return d
	}
	return 5 * time.Minute
}

func seed() uint64 {
	if s, err := strconv.ParseUint(os.Getenv("CHAOS_SEED"), 10, 64); err == nil {
		return s
	}
	var b [8]byte
	_, _ = crand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) >> 1
}

// harness is what the runs of one test share: the daemon, the proxy in front of
// it, the control plane, the built managers.
type harness struct {
	id     string
	dir    string
	daemon *daemon
	proxy  *proxy
	// other is the second daemon, behind otherProxy (hosts_test.go).
	other      *daemon
	otherProxy *proxy
	plane      *plane
	k8s        client.Client
	images     testenv.Images
	bins       map[bool]string // planted or not
}

func setup(t *testing.T) *harness {
	t.Helper()
	if os.Getenv("SANDBOX_SKIP_DOCKER") == "1" {
		t.Skip("SANDBOX_SKIP_DOCKER=1")
	}
	if os.Geteuid() != 0 {
		t.Skip("the chaos suite runs a dockerd of its own: it needs root")
	}
	// Note: envtest logs through controller-runtime's logger; the suite reports on its own.
	ctrl.SetLogger(logr.Discard())
	b := make([]byte, 2)
	_, _ = crand.Read(b)
	h := &harness{id: hex.EncodeToString(b), bins: map[bool]string{}}
	var err error
	if h.dir, err = os.MkdirTemp("", "sandbox-chaos-"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs kept in %s", h.dir)
			return
		}
		_ = os.RemoveAll(h.dir)
	})
	if h.images, err = testenv.EngineImages(); err != nil {
		t.Fatal(err)
	}
	h.startDocker(t)
	if h.plane, err = startPlane(h.dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.plane.stop)
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = sandboxv1.AddToScheme(scheme)
	cfg := *h.plane.cfg
	cfg.Timeout = 10 * time.Second
	if h.k8s, err = client.New(&cfg, client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}
	if err := h.registerHosts(t.Context()); err != nil {
		t.Fatal(err)
	}
	return h
}

// startDocker starts the suite's dockerd with the engine images, and the proxy.
func (h *harness) startDocker(t *testing.T) {
	t.Helper()
	removeStale()
	h.daemon = newDaemon(h.id, h.dir)
	t.Cleanup(h.daemon.Teardown)
	if err := h.daemon.CreateBridge(); err != nil {
		t.Fatal(err)
	}
	if err := h.daemon.Start(h.daemon.DataRoot); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := h.daemon.LoadImages([]string{h.images.Plain["postgres"], h.images.Plain["redis"], h.images.Plain["mongo"]}); err != nil {
		t.Fatal(err)
	}
	t.Logf("dockerd %s on %s, images loaded in %s", h.id, h.daemon.Socket, time.Since(start).Round(time.Second))
	var err error
	if h.proxy, err = startProxy(filepath.Join(h.dir, "docker.sock"), h.daemon.Socket); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.proxy.close)
	t.Cleanup(func() {
		if h.other != nil {
			h.other.Teardown()
		}
		if h.otherProxy != nil {
			h.otherProxy.close()
		}
	})
	if err := h.startOther(); err != nil {
		t.Fatal(err)
	}
}

// newRun starts a run's manager in a namespace of its own.
func (h *harness) newRun(t *testing.T, s settings) *run {
	t.Helper()
	instance := "chaos-" + h.id + "-" + s.name
	ns := strings.ToLower(instance)
	if err := h.k8s.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	args := []string{
		"--kubeconfig", h.plane.kubeconfig,
		// Note: no Docker host of its own: the suite's DockerHosts, shared by the replicas.
		"--docker-host-name", "",
		"--leader-elect", "--leader-election-namespace", ns, "--leader-election-id", instance,
		"--instance", instance,
		"--postgres-image", h.images.Plain["postgres"], "--postgres-kitchen-sink-image", h.images.KitchenSink["postgres"],
		"--redis-image", h.images.Plain["redis"], "--redis-kitchen-sink-image", h.images.KitchenSink["redis"],
		"--mongo-image", h.images.Plain["mongo"],
		"--health-probe-bind-address", "0",
		// Note: the tenant mode moves Sandboxes to these (the second does not exist).
		"--allowed-networks", instance + "-net," + instance + "-missing",
		"--grace-period", gracePeriod.String(), "--sweep-interval", sweepInterval.String(), "--resync-period", resyncPeriod.String(),
		"--zap-encoder", "console",
		// Note: a busy CI machine can take a minute for a postgres initdb alone.
		"--probe-deadline", "postgres=5m,redis=3m,mongo=5m",
		// Note: the tenant's slow seed (tenantSlowSeed) ends within it.
		"--init-script-timeout", "2m",
	}
	planted := s.plant != ""
	if h.bins[planted] == "" {
		bin, err := buildManager(h.dir, planted)
		if err != nil {
			t.Fatal(err)
		}
		h.bins[planted] = bin
	}
	r := &run{t: t, h: h, s: s, instance: instance,
		faultRand: rand.New(rand.NewPCG(s.seed, 1)),
		sampler:   &sampler{seen: map[string]bool{}},
		stats:     stats{injected: map[string]int{}, recovery: map[string][]time.Duration{}, violated: map[string]int{}}}
	for i := range max(1, s.replicas) {
		metrics, err := freeLoopback()
		if err != nil {
			t.Fatal(err)
		}
		r.mgrs = append(r.mgrs, &manager{bin: h.bins[planted], args: append(slices.Clone(args), "--metrics-bind-address", metrics),
			env: plantEnv(s.plant), metrics: metrics, logPath: filepath.Join(h.dir, fmt.Sprintf("manager-%s-%d.log", s.name, i))})
	}
	r.mgr = r.mgrs[0]
	r.w = &workload{h: h, r: rand.New(rand.NewPCG(s.seed, 2)), ns: ns, minLive: s.minLive, maxLive: s.maxLive, mongo: s.mongo,
		host: h.mainHost(), pools: s.pools, live: map[string]*record{}, gone: map[string]*record{}}
	if err := r.w.createPools(t.Context()); err != nil {
		t.Fatal(err)
	}
	h.proxy.take()
	for _, m := range r.mgrs {
		m.start()
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		r.teardown(ctx)
	})
	return r
}

// startOwner starts a stand-in agent container that a Sandbox follows; it comes
// back with the daemon, as an agent's would.
func (h *harness) startOwner(ctx context.Context, agentID string) error {
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	_, err := h.daemon.Docker(cctx, "run", "-d", "--name", "roboco-agent-"+agentID, "--label", testLabel+"="+h.id,
		"--restart", "always", "--tmpfs", "/data", "--entrypoint", "sleep", h.images.Plain["redis"], "infinity")
	return err
}

// startStoppedOwners starts the owner containers a daemon restart left exited,
// as an agent platform restarts its agents: Docker's restart policy alone does
// not always (a containerd task left behind refuses the restart), and a Sandbox
// whose owner stays exited is rightly deleted after the grace period.
func (h *harness) startStoppedOwners(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := h.daemon.Docker(cctx, "ps", "-a", "-q", "--filter", "label="+testLabel+"="+h.id,
		"--filter", "name=roboco-agent-", "--filter", "status=exited", "--filter", "status=created")
	if err != nil || strings.TrimSpace(out) == "" {
		return
	}
	_, _ = h.daemon.Docker(cctx, append([]string{"start"}, strings.Fields(out)...)...)
}

func (h *harness) removeOwner(ctx context.Context, rec *record) {
	if rec.owned {
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		_, _ = h.daemon.Docker(cctx, "rm", "-fv", "roboco-agent-"+rec.agentID)
	}
}

func (h *harness) danglingVolumes(ctx context.Context) ([]string, error) {
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	out, err := h.daemon.Docker(cctx, "volume", "ls", "-q", "--filter", "dangling=true")
	return strings.Fields(out), err
}

// report logs the fault table: injected, violations, recovery median and worst,
// and the Docker calls per Sandbox per minute while dockerd was down.
func (r *run) report() {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d; %d Sandboxes created, %d deleted, %d API calls failed (during faults)\n", r.s.seed, r.w.created, r.w.deleted, r.w.failedOps)
	fmt.Fprintf(&b, "%-20s %8s %10s %10s %10s\n", "fault", "injected", "violations", "median", "worst")
	for _, kind := range r.s.faults {
		rec := r.stats.recovery[kind]
		med, worst := time.Duration(0), time.Duration(0)
		if len(rec) > 0 {
			med, worst = testenv.Median(rec), slices.Max(rec)
		}
		fmt.Fprintf(&b, "%-20s %8d %10d %10s %10s\n", kind, r.stats.injected[kind], r.stats.violated[kind],
			med.Round(100*time.Millisecond), worst.Round(100*time.Millisecond))
	}
	if len(r.stats.downRates) > 0 {
		fmt.Fprintf(&b, "Docker calls per Sandbox per minute while dockerd was down: median %.1f, worst %.1f (%d windows)\n",
			medianF(r.stats.downRates), slices.Max(r.stats.downRates), len(r.stats.downRates))
	}
	fmt.Fprintf(&b, "Docker calls per Sandbox per minute, busiest cycle: %.1f (bound %d)", r.stats.worstRate, hotRate)
	r.t.Logf("fault table:\n%s", b.String())
}

func medianF(fs []float64) float64 {
	s := slices.Clone(fs)
	slices.Sort(s)
	return s[len(s)/2]
}
