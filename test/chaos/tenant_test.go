package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// The tenant-input chaos: what tenants do to their own objects, at random
// (seeded), under a SandboxQuota: Sandboxes made and deleted, their memory
// grown and shrunk, services added and dropped, their init ConfigMap given a
// key no engine runs, a key removed or the ConfigMap deleted, and a service's
// container removed out of band. A sampler checks the invariants the whole
// time, not only between actions.
//
//	CHAOS_TENANT_ACTIONS=200 go test ./test/chaos -run 'TestChaosTenant$' -v

const (
	invQuota     = "never more memory or Sandboxes running than the quota allows"
	invDeadReady = "never Ready=True beyond the bound on a service with no running container"
	invGone      = "every deleted Sandbox gone within the bound"
)

// The tenant's quota and how much it asks: more than fits, so some wait.
const (
	tenantQuotaMemory    = "1536Mi"
	tenantQuotaSandboxes = 5
	tenantMaxLive        = 7
	tenantSeedConfigMap  = "seed"
	// deadReadyBound is how long Ready may stay True on a service whose
	// container is gone (Docker's die or destroy event wakes the Sandbox).
	deadReadyBound = 30 * time.Second
)

var tenantMemories = []string{"64Mi", "128Mi", "256Mi", "384Mi"}

// TestChaosTenant runs CHAOS_TENANT_ACTIONS tenant actions (make test a short
// run, make chaos a long one); it fails naming each invariant violated.
func TestChaosTenant(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv("CHAOS_TENANT_ACTIONS"))
	if err != nil || n <= 0 {
		t.Skip("set CHAOS_TENANT_ACTIONS (make test runs a short run, make chaos a long one)")
	}
	h := setup(t)
	s := settings{name: "tenant", seed: seed(), bound: bound()}
	r := h.newRun(t, s)
	tn := &tenant{r: r, rnd: rand.New(rand.NewPCG(s.seed, 3)), deleted: map[string]time.Time{}, deadSince: map[string]time.Time{}}
	vs := tn.execute(t.Context(), n)
	for _, v := range vs {
		t.Errorf("%s", v)
	}
	if len(vs) > 0 || t.Failed() {
		t.Logf("seed %d (replay: CHAOS_SEED=%d CHAOS_TENANT_ACTIONS=%d); manager log (last 40 lines):\n%s", s.seed, s.seed, n, r.mgr.tail(40))
	}
	t.Logf("tenant actions: %v; %d samples, %d failed (last: %v)", tn.done, tn.samples, tn.failed, tn.lastErr)
	if tn.failed*10 > tn.samples {
		t.Errorf("%d of %d samples failed: the invariants were not watched (last: %v)", tn.failed, tn.samples, tn.lastErr)
	}
}

// tenant is one tenant's objects in the run's namespace, and what it did.
type tenant struct {
	r   *run
	rnd *rand.Rand
	n   int // Sandboxes made
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
}

// execute makes the quota and the init ConfigMap, takes n actions with the
// sampler watching, and waits for the last one to settle.
func (tn *tenant) execute(ctx context.Context, n int) []violation {
	r := tn.r
	tn.done = map[string]int{}
	r.t.Logf("tenant: seed %d (replay with CHAOS_SEED=%d), %d actions, instance %s, manager log %s", r.s.seed, r.s.seed, n, r.instance, r.mgr.logPath)
	q := &sandboxv1.SandboxQuota{}
	q.Namespace, q.Name = r.w.ns, "team"
	q.Spec.Hard = sandboxv1.QuotaAmounts{Sandboxes: ptr.To[int32](tenantQuotaSandboxes), Memory: ptr.To(resource.MustParse(tenantQuotaMemory))}
	if err := r.h.k8s.Create(ctx, q); err != nil {
		r.t.Fatal(err)
	}
	if err := tn.writeSeed(ctx, map[string]string{"10-keys.redis": "SET seeded 1"}); err != nil {
		r.t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { tn.sample(sctx) })
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		kind, target, err := tn.act(ctx)
		tn.done[kind]++
		r.t.Logf("action %d: %s %s%s", i+1, kind, target, errNote(err))
		sleep(ctx, between(tn.rnd, 300*time.Millisecond, 2*time.Second))
	}
	// Note: the last actions' effects are sampled until they settle (every
	// deletion done, no Ready service without its container), at most the bound.
	for end := time.Now().Add(r.s.bound); time.Now().Before(end) && !tn.settled(); {
		sleep(ctx, time.Second)
	}
	sleep(ctx, deadReadyBound)
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
		cs, err = tn.r.h.tenantContainers(ctx, tn.r.instance)
	}
	tn.mu.Lock()
	tn.samples++
	if err != nil {
		tn.failed, tn.lastErr = tn.failed+1, err
	}
	tn.mu.Unlock()
	if err != nil {
		return
	}
	tn.checkQuota(cs)
	tn.checkDeadReady(sbs, cs)
	tn.checkGone(sbs, last)
}

// checkQuota: what runs never takes more than the quota's hard amounts.
func (tn *tenant) checkQuota(cs []tenantContainer) {
	var mem int64
	uids := map[string]bool{}
	for _, c := range cs {
		if c.running {
			mem += c.memory
			uids[c.uid] = true
		}
	}
	hard := resource.MustParse(tenantQuotaMemory)
	if mem > hard.Value() || len(uids) > tenantQuotaSandboxes {
		tn.r.violate(invQuota, fmt.Sprintf("%s of memory in %d Sandboxes running, hard %s and %d",
			resource.NewQuantity(mem, resource.BinarySI), len(uids), tenantQuotaMemory, tenantQuotaSandboxes))
	}
}

// checkDeadReady: a Sandbox Ready for longer than the bound while a service
// its status reports has no running container. (A service the quota keeps
// from being made is not reported: a refused growth leaves the Sandbox Ready
// as it runs.)
func (tn *tenant) checkDeadReady(sbs map[string]*sandboxv1.Sandbox, cs []tenantContainer) {
	running := map[string]bool{}
	for _, c := range cs {
		if c.running {
			running[c.uid+"/"+c.engine] = true
		}
	}
	tn.mu.Lock()
	defer tn.mu.Unlock()
	seen := map[string]bool{}
	for _, sb := range sbs {
		if sb.DeletionTimestamp != nil || !meta.IsStatusConditionTrue(sb.Status.Conditions, sandboxv1.ConditionReady) {
			continue
		}
		for _, svc := range sb.Status.Services {
			key := string(sb.UID) + "/" + string(svc.Engine)
			if running[key] || svc.ContainerID == "" {
				continue
			}
			seen[key] = true
			since, ok := tn.deadSince[key]
			if !ok {
				tn.deadSince[key] = time.Now()
			} else if time.Since(since) > deadReadyBound {
				tn.r.violate(invDeadReady, fmt.Sprintf("%s is Ready=True, its %s has had no running container for %s",
					sb.Name, svc.Engine, time.Since(since).Round(time.Second)))
				tn.deadSince[key] = time.Now() // said once per bound
			}
		}
	}
	for key := range tn.deadSince {
		if !seen[key] {
			delete(tn.deadSince, key)
		}
	}
}

// checkGone: a deleted Sandbox still there past the run's bound (at the last
// look, after the run settled: still there at all).
func (tn *tenant) checkGone(sbs map[string]*sandboxv1.Sandbox, last bool) {
	tn.mu.Lock()
	defer tn.mu.Unlock()
	present := map[string]*sandboxv1.Sandbox{}
	for _, sb := range sbs {
		present[string(sb.UID)] = sb
	}
	for uid, at := range tn.deleted {
		sb, there := present[uid]
		switch {
		case !there:
			delete(tn.deleted, uid)
		case time.Since(at) > tn.r.s.bound || last:
			tn.r.violate(invGone, fmt.Sprintf("%s deleted %s ago is still there (finalizers %v)", sb.Name,
				time.Since(at).Round(time.Second), sb.Finalizers))
			delete(tn.deleted, uid) // said once
		}
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
