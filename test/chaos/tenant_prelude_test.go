package chaos

import (
	"context"
	"slices"
	"time"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// Two of a planted run's first actions are waits, not actions:
const (
	// awaitReady waits, at most the run's bound, until every live Sandbox is
	// Ready.
	awaitReady = "await-ready"
	// awaitPasses waits, at most the run's bound, until the managers ran a
	// Sandbox pass per live Sandbox since the action before it began: what it
	// changed is what their passes read next (a ConfigMap edit has reached
	// their caches).
	awaitPasses = "await-passes"
)

// prelude takes tn.first's actions in order and then waits until every
// Sandbox is Ready.
func (tn *tenant) prelude(ctx context.Context) {
	if len(tn.first) == 0 {
		return
	}
	var before float64
	for _, kind := range tn.first {
		switch kind {
		case awaitReady:
			tn.awaitReady(ctx)
		case awaitPasses:
			tn.awaitPasses(ctx, before)
		default:
			before = tn.sandboxPasses(ctx)
			kind, target, err := tn.act(ctx, kind)
			tn.done[kind]++
			tn.r.t.Logf("first action: %s %s%s", kind, target, errNote(err))
		}
	}
	tn.awaitReady(ctx)
}

func (tn *tenant) awaitReady(ctx context.Context) {
	for end := time.Now().Add(tn.r.s.bound); time.Now().Before(end); sleep(ctx, time.Second) {
		if live, err := tn.live(ctx); err == nil && !slices.ContainsFunc(live, func(sb *sandboxv1.Sandbox) bool { return !ready(sb) }) {
			return
		}
	}
}

func (tn *tenant) awaitPasses(ctx context.Context, before float64) {
	for end := time.Now().Add(tn.r.s.bound); time.Now().Before(end); sleep(ctx, 500*time.Millisecond) {
		if live, err := tn.live(ctx); err == nil && tn.sandboxPasses(ctx) >= before+float64(len(live)) {
			return
		}
	}
	tn.r.t.Logf("%s: fewer Sandbox passes than live Sandboxes within %s", awaitPasses, tn.r.s.bound)
}

// sandboxPasses sums the managers' Sandbox passes so far (a manager down is
// not counted).
func (tn *tenant) sandboxPasses(ctx context.Context) float64 {
	total := 0.0
	for _, m := range tn.r.mgrs {
		if c, err := m.passCounts(ctx); err == nil {
			total += c.sandbox
		}
	}
	return total
}
