package chaos

import (
	"cmp"
	"slices"
	"testing"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/chaosplant"
)

// tenantPlantedActions caps a planted bug's run: it stops at the first
// violation of the invariant it breaks, well before on a quiet machine (the
// cap costs only a miss's time); beside the fault run and the e2e suite (load
// 40-70) growth past the quota took 54 actions.
const tenantPlantedActions = 150

// A planted bug per invariant of the tenant mode, each with the tenant
// actions that open its window (as TestChaosPlanted gives each bug its fault).
var tenantPlanted = []tenantPlant{
	// Growth judged once: a Sandbox grown past what its quota has room for
	// is made as it asks. Sandboxes are made and only grow: the quota is
	// full after a few actions, and the next growth is past it.
	{bug: chaosplant.GrowthUnjudged, invariant: invQuota, kinds: []string{"create", "grow"}},
	// The same bug past the host's capacity, set below the quota first.
	{bug: chaosplant.GrowthUnjudged, label: "host", invariant: invHost, first: []string{"capacity-tight"},
		kinds: []string{"create", "grow"}},
	// A pass that returns before it observes while the init ConfigMap is
	// broken leaves a seeded Sandbox Ready with its container removed. Two
	// seeded Sandboxes are Ready, then the ConfigMap broken, and the passes
	// read it, before any removal (one that came first would be made again
	// and never Ready, under load); nothing mends it, and no other Sandbox
	// is made, so most removals hit a seeded one (the rest, the pool's member).
	{bug: chaosplant.ObserveStopsOnBadInit, invariant: invDeadReady,
		first: []string{"create-seeded", "create-seeded", awaitReady, "seed-bad-key", awaitPasses},
		kinds: []string{"remove-container"}},
	// A teardown that reads the init scripts first wedges a seeded Sandbox's
	// deletion while they are broken (and no action mends them).
	{bug: chaosplant.TeardownNeedsInit, invariant: invGone, first: []string{"create-seeded", "create-seeded"},
		kinds: []string{"create", "delete", "seed-bad-key"}, bound: 45 * time.Second},
	// A pass that waits for its step (a seed) to end holds a worker as long
	// as the tenant's script runs; the slow script makes it longer than any
	// pass may take.
	{bug: chaosplant.StepAwaited, invariant: invPassWaits, first: []string{"seed-slow", "create-seeded"},
		kinds: []string{"create", "delete"}},
	// A pool that offers the members claims renamed (and an index that
	// offers what a claim took) hands a member serving one Sandbox to the
	// next claim: its agent reads the first's marker. Only turnovers: every
	// new Sandbox claims, and the oldest goes when the quota is full.
	{bug: chaosplant.ClaimedOfferedAgain, invariant: invGiven, kinds: []string{"turnover"}},
	// A DockerHost deleted while Sandboxes and a pool run on it goes at once,
	// and they lose the host that serves them. Two seeded redis Sandboxes
	// are Ready first (a postgres one the tenant gives too little memory
	// never is).
	{bug: chaosplant.HostGoesWhileBound, invariant: invHostBound, first: []string{"create-seeded", "create-seeded", awaitReady},
		kinds: []string{"host-delete"}},
	// Not a manager bug: a deployment without config/default's admission
	// policies lets a tenant strip the teardown finalizer.
	{bug: "no-finalizer-guard", unguarded: true, invariant: invStrip, kinds: []string{"create", "strip-finalizer"}},
}

type tenantPlant struct {
	bug, invariant string
	// label tells apart the runs of one bug against different invariants.
	label        string
	kinds, first []string
	// bound is the run's bound (the suite's when 0).
	bound time.Duration
	// unguarded: the bug is the API server's admission policies left out;
	// the manager is a normal build.
	unguarded bool
}

// name is the plant's bug, and its label when it has one.
func (c tenantPlant) name() string {
	if c.label == "" {
		return c.bug
	}
	return c.bug + "-" + c.label
}

// run runs the planted build under the plant's actions until the invariant
// it breaks is violated, which must happen.
func (c tenantPlant) run(t *testing.T, h *harness) {
	s := settings{name: "tenant-plant-" + c.name(), seed: seed(), bound: cmp.Or(c.bound, bound()), plant: c.bug, stopOn: []string{c.invariant}}
	if c.unguarded {
		s.plant = ""
	}
	tn := newTenant(h.newRun(t, s), c.kinds, c.first)
	tn.unguarded = c.unguarded
	// Note: this run is meant to break invariants; its report is the test.
	vs := tn.execute(t.Context(), tenantPlantedActions)
	// The init ConfigMap as it was, so that what a broken one wedged goes.
	if err := tn.writeSeed(t.Context(), map[string]string{"10-keys.redis": "SET seeded 1"}); err != nil {
		t.Logf("restoring the init ConfigMap: %v", err)
	}
	i := slices.IndexFunc(vs, func(v violation) bool { return v.invariant == c.invariant })
	if i < 0 {
		t.Errorf("planted bug %s not caught: no violation of %q in %d actions %v (violations: %v); replay with CHAOS_SEED=%d",
			c.bug, c.invariant, tenantPlantedActions, tn.done, vs, s.seed)
		return
	}
	t.Logf("planted bug %s caught after %v: %s", c.bug, tn.done, vs[i])
}
