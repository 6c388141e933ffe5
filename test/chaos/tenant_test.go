package chaos

import (
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// The tenant-input chaos: what tenants do to their own objects, at random
// (seeded), under a SandboxQuota: Sandboxes made (claims among them) and
// deleted (an orchestrator's turnover too; an agentID
// reused at once among them), their memory grown and shrunk, services added
// and dropped, networks moved, data requests, claims from a pool whose
// replicas change, their init ConfigMap given a key no engine runs, a slow
// script, a key removed or the ConfigMap deleted, a service's container
// removed out of band, finalizers stripped; and the operator's (cordons,
// policies, quota and capacity changes: tenant_operator_test.go). A sampler checks the
// invariants the whole time, not only between actions.
//
//	CHAOS_TENANT_ACTIONS=200 go test ./test/chaos -run 'TestChaosTenant$' -v

const (
	invQuota     = "never more memory or Sandboxes running than the quota allows"
	invHost      = "never more memory, Sandboxes and members running than the host allows"
	invDeadReady = "never Ready=True beyond the bound on a service with no running container"
	invGone      = "every deleted Sandbox gone within the bound"
)

// The tenant's quota and how much it asks: more than fits, so some wait.
const (
	tenantQuotaMemory    = "1536Mi"
	tenantQuotaSandboxes = 5
	tenantQuotaMembers   = 2
	tenantMaxLive        = 7
	tenantSeedConfigMap  = "seed"
	tenantQuotaName      = "team"
	// deadReadyBound is how long Ready may stay True on a service whose
	// container is gone (Docker's die or destroy event wakes the Sandbox).
	deadReadyBound = 30 * time.Second
)

var tenantMemories = []string{"64Mi", "128Mi", "256Mi", "384Mi"}

// TestChaosTenant runs CHAOS_TENANT_ACTIONS tenant actions (make test a short
// run, make chaos a long one); it fails naming each invariant violated. Then
// each planted bug runs until the invariant it breaks is caught
// (tenant_planted_test.go).
func TestChaosTenant(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv("CHAOS_TENANT_ACTIONS"))
	if err != nil || n <= 0 {
		t.Skip("set CHAOS_TENANT_ACTIONS (make test runs a short run, make chaos a long one)")
	}
	// Note: beside the fault run, each on daemons and a control plane of its own.
	t.Parallel()
	h := setup(t)
	t.Run("actions", func(t *testing.T) {
		s := settings{name: "tenant", seed: seed(), bound: bound()}
		var kinds []string // all
		if only := os.Getenv("CHAOS_TENANT_KINDS"); only != "" {
			kinds = strings.Split(only, ",")
		}
		tn := newTenant(h.newRun(t, s), kinds, nil)
		vs := tn.execute(t.Context(), n)
		for _, v := range vs {
			t.Errorf("%s", v)
		}
		if len(vs) > 0 || t.Failed() {
			t.Logf("seed %d (replay: CHAOS_SEED=%d CHAOS_TENANT_ACTIONS=%d -run 'TestChaosTenant/actions'); manager log (last 40 lines):\n%s",
				s.seed, s.seed, n, tn.r.mgr.tail(40))
		}
		t.Logf("tenant actions: %v; %d samples, %d failed (last: %v)", tn.done, tn.samples, tn.failed, tn.lastErr)
		if tn.failed*10 > tn.samples {
			t.Errorf("%d of %d samples failed: the invariants were not watched (last: %v)", tn.failed, tn.samples, tn.lastErr)
		}
	})
	for _, c := range tenantPlanted {
		t.Run("planted/"+c.name(), func(t *testing.T) { c.run(t, h) })
	}
}

func newTenant(r *run, kinds, first []string) *tenant {
	return &tenant{r: r, rnd: rand.New(rand.NewPCG(r.s.seed, 3)), kinds: kinds, first: first,
		deleted: map[string]time.Time{}, deadSince: map[string]time.Time{}, passes: make([]passCounts, len(r.mgrs)),
		quota: tenantLimit{set: true, memory: resource.MustParse(tenantQuotaMemory), units: tenantQuotaSandboxes}}
}

// tenant is one tenant's objects in the run's namespace, and what it did.
type tenant struct {
	r   *run
	rnd *rand.Rand
	// k8s acts as the tenant (actAsTenant); unguarded: the API server has no
	// admission policies (a deployment that left them out).
	k8s       client.Client
	unguarded bool
	// kinds are the actions it takes at random (nil: all); first, those it
	// takes before them, in order, and then waits until every Sandbox it
	// made is Ready.
	kinds, first []string
	n            int // Sandboxes made
	// done counts the actions taken, by kind.
	done map[string]int

	mu sync.Mutex
	// deleted: when each deleted Sandbox (by UID) was deleted.
	deleted map[string]time.Time
	// deadSince: when a Ready Sandbox's service (uid/engine) was first seen
	// with no running container.
	deadSince map[string]time.Time
	// samples looked, failed of them (the last one's error).
	samples, failed int
	lastErr         error
	// passes: each manager's pass counts at the last look.
	passes []passCounts
	// quota: the hard amounts in force (editQuota); capacity: the run's
	// host's (editCapacity).
	quota, capacity tenantLimit
}

// execute makes the quota and the init ConfigMap, takes n actions with the
// sampler watching, and waits for the last one to settle.
func (tn *tenant) execute(ctx context.Context, n int) []violation {
	r := tn.r
	tn.done = map[string]int{}
	r.t.Logf("tenant: seed %d (replay with CHAOS_SEED=%d), %d actions, instance %s, manager log %s", r.s.seed, r.s.seed, n, r.instance, r.mgr.logPath)
	q := &sandboxv1.SandboxQuota{}
	q.Namespace, q.Name = r.w.ns, tenantQuotaName
	q.Spec.Hard = sandboxv1.QuotaAmounts{Sandboxes: ptr.To[int32](tenantQuotaSandboxes), PoolMembers: ptr.To[int32](tenantQuotaMembers),
		Memory: ptr.To(resource.MustParse(tenantQuotaMemory))}
	if err := r.h.k8s.Create(ctx, q); err != nil {
		r.t.Fatal(err)
	}
	pool := tenantPool()
	pool.Namespace, pool.Spec.DockerHost = r.w.ns, r.w.host
	if err := r.h.k8s.Create(ctx, pool); err != nil {
		r.t.Fatal(err)
	}
	if err := tn.actAsTenant(ctx, !tn.unguarded); err != nil {
		r.t.Fatal(err)
	}
	if err := tn.labelNamespace(ctx); err != nil {
		r.t.Fatal(err)
	}
	defer tn.restoreOperator(context.WithoutCancel(ctx))
	if err := tn.writeSeed(ctx, map[string]string{"10-keys.redis": "SET seeded 1"}); err != nil {
		r.t.Fatal(err)
	}
	if _, err := r.h.daemon.Docker(ctx, "network", "create", "--label", instanceLabel+"="+r.instance, r.instance+"-net"); err != nil {
		r.t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { tn.sample(sctx) })
	tn.prelude(ctx)
	for i := range n {
		if ctx.Err() != nil || r.over() {
			r.t.Logf("the actions end after %d: the run has its verdict", i)
			break
		}
		kind, target, err := tn.act(ctx, "")
		tn.done[kind]++
		r.t.Logf("action %d: %s %s%s", i+1, kind, target, errNote(err))
		sleep(ctx, between(tn.rnd, 300*time.Millisecond, 2*time.Second))
	}
	// Note: the last actions' effects are sampled until they settle (every
	// deletion done, no Ready service without its container), at most the
	// bound, and for the dead-Ready bound (and a sample more) after the last
	// action: a container it removed has that long to be reported.
	last := time.Now()
	for end := last.Add(r.s.bound); time.Now().Before(end) && !r.over() && (!tn.settled() || time.Since(last) <= deadReadyBound); {
		sleep(ctx, time.Second)
	}
	stop()
	wg.Wait()
	tn.sampleOnce(ctx, true)
	for _, m := range r.mgrs {
		if p := m.panics(); p != "" {
			r.violate(invPanic, p)
		}
	}
	return r.violations
}

func errNote(err error) string {
	if err == nil {
		return ""
	}
	return " (" + err.Error() + ")"
}

// settled: no deletion and no dead Ready service is pending.
func (tn *tenant) settled() bool {
	tn.mu.Lock()
	defer tn.mu.Unlock()
	return len(tn.deleted) == 0 && len(tn.deadSince) == 0
}

// sample checks the invariants every half second until ctx ends.
func (tn *tenant) sample(ctx context.Context) {
	for ctx.Err() == nil {
		tn.sampleOnce(ctx, false)
		sleep(ctx, 500*time.Millisecond)
	}
}

// sampleOnce looks at the tenant's Sandboxes and containers once and checks
// the invariants (last: the final look, after the run).
func (tn *tenant) sampleOnce(ctx context.Context, last bool) {
	sbs, err := tn.r.w.sandboxes(ctx)
	var cs []tenantContainer
	if err == nil {
		cs, err = tn.r.h.tenantContainers(ctx, tn.r.instance, sbs)
	}
	tn.mu.Lock()
	tn.samples++
	n := tn.samples
	if err != nil {
		tn.failed, tn.lastErr = tn.failed+1, err
	}
	tn.mu.Unlock()
	if err != nil {
		return
	}
	tn.checkQuota(cs)
	tn.checkHost(cs)
	tn.checkDeadReady(sbs, cs)
	tn.checkGone(sbs, last)
	tn.checkPasses(ctx)
	if last || n%givenEvery == 0 {
		tn.checkGiven(ctx, sbs)
	}
}

// live is the tenant's Sandboxes not being deleted, by name order.
func (tn *tenant) live(ctx context.Context) ([]*sandboxv1.Sandbox, error) {
	sbs, err := tn.r.w.sandboxes(ctx)
	if err != nil {
		return nil, err
	}
	var out []*sandboxv1.Sandbox
	for _, sb := range sbs {
		if sb.DeletionTimestamp == nil {
			out = append(out, sb)
		}
	}
	slices.SortFunc(out, func(a, b *sandboxv1.Sandbox) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
