package chaos

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// settings are one run's: how many cycles, which faults, which planted bug.
type settings struct {
	name    string
	cycles  int
	seed    uint64
	faults  []string
	plant   string // a chaosplant bug; the planted build runs
	minLive int
	maxLive int
	mongo   bool
	// pools: the workload claims from warm pools of every engine it runs.
	pools bool
	// replicas is how many managers share the hosts (1 when 0).
	replicas int
	// warmup is how long the workload runs before the first fault.
	warmup time.Duration
	// bound is how long every Sandbox may take to be Ready again after a fault.
	bound time.Duration
	// stopOn ends the run at the first violation of one of these (a planted
	// bug's run: once caught, further cycles show nothing more).
	stopOn []string
}

// The manager's timings in the suite: short, so that every path runs in a cycle.
const (
	gracePeriod   = 45 * time.Second
	sweepInterval = 3 * time.Second
	resyncPeriod  = 30 * time.Second
)

// run is one chaos run: its own instance, namespace, manager and workload.
type run struct {
	t         *testing.T
	h         *harness
	s         settings
	instance  string
	mgrs      []*manager
	mgr       *manager // mgrs[0]
	w         *workload
	faultRand *rand.Rand
	sampler   *sampler
	stats     stats

	mu         sync.Mutex
	cycle      *cycle
	violations []violation
}

// cycle is one fault and the checks after it.
type cycle struct {
	n      int
	fault  string
	target string
	cause  cause
	start  time.Time
	// deletes is the workload's answered deletes when the cycle began.
	deletes int
	// data is the reset or restore the cycle cut short (data-cut).
	data *dataCut
}

type stats struct {
	injected  map[string]int
	recovery  map[string][]time.Duration
	violated  map[string]int // by fault
	downRates []float64      // Docker calls per Sandbox per minute while dockerd was down
	worstRate float64        // Docker calls per Sandbox per minute, the busiest cycle
}

func (r *run) violate(invariant, detail string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := violation{invariant: invariant, detail: detail}
	if r.cycle != nil {
		v.cycle, v.fault = r.cycle.n, r.cycle.fault
		r.stats.violated[r.cycle.fault]++
	}
	r.violations = append(r.violations, v)
	r.t.Logf("VIOLATION %s", v)
}

// execute runs the cycles and the final check, and returns the violations.
func (r *run) execute(ctx context.Context) []violation {
	r.t.Logf("%s: seed %d (replay with CHAOS_SEED=%d), %d cycles, faults %v, instance %s, manager log %s",
		r.s.name, r.s.seed, r.s.seed, r.s.cycles, r.s.faults, r.instance, r.mgr.logPath)
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { r.w.run(runCtx) })
	wg.Go(func() { r.sampler.run(runCtx, r.h, r.instance) })
	defer func() { stop(); wg.Wait() }()

	warm := &cycle{n: 0, fault: "none (warm-up)", start: time.Now(), deletes: r.w.deletes(),
		cause: cause{sandboxes: map[string]bool{}, services: map[string]bool{}}}
	r.mu.Lock()
	r.cycle = warm
	r.mu.Unlock()
	sleep(ctx, r.s.warmup)
	if !r.check(ctx, warm) && r.giveUp(warm) || r.over() {
		return r.violations
	}
	order := schedule(r.faultRand, r.s.faults, r.s.cycles)
	for i, kind := range order {
		if ctx.Err() != nil {
			break
		}
		c := &cycle{n: i + 1, fault: kind, start: time.Now(), deletes: r.w.deletes(),
			cause: cause{sandboxes: map[string]bool{}, services: map[string]bool{}}}
		r.mu.Lock()
		r.cycle = c
		r.mu.Unlock()
		sleep(ctx, between(r.faultRand, 500*time.Millisecond, 4*time.Second))
		if err := r.inject(ctx, c); err != nil {
			r.t.Errorf("cycle %d: injecting %s: %v", c.n, kind, err)
			break
		}
		r.stats.injected[kind]++
		if !r.check(ctx, c) && r.giveUp(c) || r.over() {
			break
		}
	}
	return r.violations
}

// lost reports a Sandbox that vanished although nobody deleted it.
func (r *run) lost(_ *record, why string) { r.violate(invDeleted, why) }

// check pauses the workload, waits until everything settled (every Sandbox Ready,
// the deleted ones gone, nothing leaked) and checks the invariants; it says
// whether everything settled within the bound.
func (r *run) check(ctx context.Context, c *cycle) bool {
	r.w.ops.Lock()
	defer r.w.ops.Unlock()
	end := time.Now()
	var st state
	var err error
	settled := false
	for deadline := end.Add(r.s.bound); ; {
		st, err = r.look(ctx, r.lost)
		if settled = err == nil && st.settled(); settled {
			r.stats.recovery[c.fault] = append(r.stats.recovery[c.fault], time.Since(end))
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			r.unsettled(st, err)
			break
		}
		sleep(ctx, time.Second)
	}
	for _, d := range r.sampler.take() {
		r.violate(invTwo, d)
	}
	for _, d := range st.shared {
		r.violate(invShared, d)
	}
	// A deleted Secret explains new passwords and containers until both are seen.
	for _, rec := range r.w.records() {
		if rec.rotating {
			c.cause.sandboxes[string(rec.uid)] = true
			rec.rotating = !r.rotated(ctx, rec, st.containers)
		}
	}
	r.checkServices(ctx, c, st.containers)
	r.checkData(ctx, c, st.containers)
	r.checkDataCut(ctx, c)
	r.checkPasswords(ctx, c)
	r.checkHotLoop(c)
	for _, m := range r.mgrs {
		if p := m.panics(); p != "" {
			r.violate(invPanic, p)
		}
	}
	outcome := map[bool]string{true: "recovered in", false: "not settled after"}[settled]
	r.t.Logf("cycle %d: %s%s; %d live, %s %s", c.n, c.fault, targetNote(c), len(r.w.records()), outcome, time.Since(end).Round(100*time.Millisecond))
	return settled
}

func targetNote(c *cycle) string {
	if c.target == "" {
		return ""
	}
	return " (" + c.target + ")"
}

// unsettled reports what did not settle within the bound.
func (r *run) unsettled(st state, err error) {
	if err != nil {
		r.violate(invReady, fmt.Sprintf("not settled within %s: the last look failed: %v", r.s.bound, err))
		return
	}
	if len(st.notReady)+len(st.stillThere) > 0 {
		r.violate(invReady, fmt.Sprintf("not Ready within %s: %s; deleted but still there: %s", r.s.bound,
			strings.Join(st.notReady, "; "), strings.Join(st.stillThere, "; ")))
	}
	if len(st.orphans)+len(st.volumes)+len(st.secrets) > 0 {
		r.violate(invLeak, fmt.Sprintf("%s after the fault: containers %v, dangling volumes %v, Secrets %v",
			r.s.bound, st.orphans, st.volumes, st.secrets))
	}
	if len(st.members) > 0 {
		r.violate(invMemberLeak, fmt.Sprintf("%s after the fault: %s", r.s.bound, strings.Join(st.members, "; ")))
	}
}

// checkServices: one container per service, and the same one as at the last
// check unless the cycle's fault explains its replacement.
func (r *run) checkServices(ctx context.Context, c *cycle, cs []container) {
	for _, d := range twoPerService(cs) {
		r.violate(invTwo, d)
	}
	by := map[string]map[string]string{}
	for _, ct := range cs {
		if by[ct.uid] == nil {
			by[ct.uid] = map[string]string{}
		}
		by[ct.uid][ct.engine] = ct.id
	}
	for _, rec := range r.w.records() {
		now := by[string(rec.uid)]
		for engine, was := range rec.containers {
			if id := now[engine]; id != "" && id != was && !c.cause.explains(string(rec.uid), engine) {
				r.violate(invReplaced, fmt.Sprintf("%s's %s container %s was replaced by %s; the fault explains no replacement",
					rec.name, engine, was, id))
			}
		}
		rec.containers = maps.Clone(now)
	}
}

// checkPasswords: a live Sandbox's passwords are those first seen, unless its
// Secret was deleted in this cycle.
func (r *run) checkPasswords(ctx context.Context, c *cycle) {
	for _, rec := range r.w.records() {
		pw, err := r.passwords(ctx, rec)
		if err != nil {
			r.violate(invPassword, fmt.Sprintf("reading %s's Secret: %v", rec.name, err))
			continue
		}
		if rec.passwords != nil && !maps.Equal(rec.passwords, pw) && !c.cause.sandboxes[string(rec.uid)] {
			r.violate(invPassword, fmt.Sprintf("%s's passwords changed (keys %v), and its Secret was not deleted", rec.name, slices.Sorted(maps.Keys(pw))))
		}
		rec.passwords = pw
	}
}

// checkHotLoop: per cycle, no container created more than hotCreates times, and
// no more than hotRate Docker calls per Sandbox per minute, counting every
// Sandbox the cycle saw (those deleted in it too: their teardown is in the count).
// A cycle shorter than a minute is judged by its calls over a whole minute: a
// burst of creates is no loop, and scaling it up to a rate would call it one.
func (r *run) checkHotLoop(c *cycle) {
	calls, creates := r.h.proxy.take()
	for name, n := range creates {
		if n > hotCreates {
			r.violate(invHotLoop, fmt.Sprintf("container %s created %d times in one cycle", name, n))
		}
	}
	live := max(1, len(r.w.records())+r.w.deletes()-c.deletes)
	rate := float64(work(calls)) / max(time.Since(c.start), time.Minute).Minutes() / float64(live)
	r.stats.worstRate = max(r.stats.worstRate, rate)
	if rate > hotRate {
		r.violate(invHotLoop, fmt.Sprintf("%.0f Docker calls per Sandbox per minute (bound %d): %s", rate, hotRate, topCalls(calls)))
	}
}

func topCalls(calls map[string]int) string {
	keys := slices.Collect(maps.Keys(calls))
	sort.Slice(keys, func(i, j int) bool { return calls[keys[i]] > calls[keys[j]] })
	var parts []string
	for _, k := range keys[:min(6, len(keys))] {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, calls[k]))
	}
	return strings.Join(parts, ", ")
}
