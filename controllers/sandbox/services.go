package sandbox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/controllers/sandbox/data"
	"github.com/roboco-sandbox/sandbox-controller/internal/chaosplant"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
)

// provisionServices drives every service one step further, and summarizes them
// in status. A refused growth (held) comes back at its recheck at the latest.
func (r *Reconciler) provisionServices(ctx context.Context, p *pass) (ctrl.Result, bool, error) {
	result, err := r.reconcileServices(ctx, p.sb, p.creds, p.held)
	if p.held != nil {
		result.RequeueAfter = kit.Soonest(result.RequeueAfter, p.held.result.RequeueAfter)
	}
	return result, true, err
}

// reconcileServices provisions every service in parallel with the passwords of
// creds and summarizes the result into sb.Status. held (nil: none) is a refused
// growth: only the services that have containers are looked at, and none of
// them is made or replaced.
func (r *Reconciler) reconcileServices(ctx context.Context, sb *sandboxv1.Sandbox, creds *credentials, held *verdict) (ctrl.Result, error) {
	// Note: a member reserved for a service that did not claim it this pass is
	// removed, whatever ends the pass (see reserve).
	unclaimed := creds.reserved
	defer func() { r.unreserve(ctx, unclaimed) }()
	defer func() { _ = creds.made() }() // no pass ends with its Secret's create in flight
	specs, blocked, stalled := r.resolveServices(ctx, sb, creds)
	if stalled {
		return ctrl.Result{RequeueAfter: kit.Jitter(kit.StalledRecheck)}, nil
	}
	ours, claims, err := r.ours(ctx, sb, specs, creds)
	if err != nil {
		dockerDown(sb, err, retryLater(ctx))
		return ctrl.Result{}, nil
	}
	if err := r.dropLegacyClaims(ctx, sb, claims); err != nil {
		logf.FromContext(ctx).Error(err, "Removing the claim annotations of an earlier release; retried next pass")
	}
	for i := range specs {
		if c, ok := claims[specs[i].Engine.Name()]; ok {
			specs[i].Claims = map[string]string{c.ID: c.Credentials}
		}
	}
	byEngine := byEngineOf(ours)
	if held != nil {
		specs = heldAsTheyRun(specs, byEngine)
	}
	dropped, err := r.removeDropped(ctx, sb, specs, byEngine)
	if err != nil {
		return ctrl.Result{}, err
	}
	results := r.runServices(ctx, sb, specs, blocked, byEngine, creds.reserved)
	unclaimed = maps.Clone(unclaimed)
	for _, res := range results {
		if res.claimedReserved {
			delete(unclaimed, string(res.status.Engine))
		}
	}
	if err := creds.made(); err != nil {
		return ctrl.Result{}, err // Note: its members renamed stay recorded; the next pass makes it (renamedClaims).
	}
	if slices.ContainsFunc(results, func(res serviceResult) bool { return res.claimedReserved }) {
		chaosplant.CrashAfter(chaosplant.AfterClaimRenamed)
	}
	wasReady, oldConditions := isReady(sb), conditionReasons(sb)
	summarize(sb, results)
	if held != nil {
		held.hold(sb)
	}
	data.Summarize(sb)
	r.report(ctx, sb, results, wasReady, oldConditions)
	moving := held == nil && dropped == 0 && !slices.ContainsFunc(specs, func(s host.Service) bool { return s.Hold })
	settle := r.settleShrink(ctx, sb, moving && allCurrent(results), moving)
	result := passResult(results, r.Options.ResyncPeriod)
	result.RequeueAfter = kit.Soonest(result.RequeueAfter, dropped, settle)
	return result, nil
}

// allCurrent: every service's containers are as its spec asks.
func allCurrent(results []serviceResult) bool {
	return !slices.ContainsFunc(results, func(res serviceResult) bool { return !res.current })
}

// resolveServices resolves each service's container spec; stalled says one
// cannot be resolved (sb's status says why, once a Warning). A service whose
// init scripts cannot be had is resolved as it is without them, held as it
// runs: blocked says why, by engine.
func (r *Reconciler) resolveServices(ctx context.Context, sb *sandboxv1.Sandbox, creds *credentials) (specs []host.Service, blocked map[string]string, stalled bool) {
	specs = make([]host.Service, len(sb.Spec.Services))
	blocked = map[string]string{}
	for i, svc := range sb.Spec.Services {
		var err error
		if specs[i], err = r.Class.Sandbox(ctx, sb, svc, creds.passwords[string(svc.Engine)]); errors.As(err, new(errInit)) {
			if chaosplant.Active(chaosplant.ObserveStopsOnBadInit) {
				return nil, nil, true
			}
			specs[i].Hold = true
			blocked[string(svc.Engine)] = err.Error()
		} else if err != nil {
			// Note: the Warning once per stall, not on every recheck.
			if c := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1.ConditionStalled); c == nil || c.Message != err.Error() {
				r.Recorder.Eventf(sb, nil, corev1.EventTypeWarning, sandboxv1.ReasonInvalidSpec, sandboxv1.ActionValidate, "%s", err.Error())
			}
			stallAll(sb, sandboxv1.ReasonInvalidSpec, err.Error())
			return nil, nil, true
		}
	}
	return specs, blocked, false
}

// byEngineOf groups a Sandbox's containers by their engine.
func byEngineOf(ours []dd.ContainerSummary) map[string][]dd.ContainerSummary {
	byEngine := map[string][]dd.ContainerSummary{}
	for _, c := range ours {
		byEngine[c.Labels[host.LabelEngine]] = append(byEngine[c.Labels[host.LabelEngine]], c)
	}
	return byEngine
}

// heldAsTheyRun keeps, of specs, the services that have containers, each held as it
// runs: a service the spec added waits with the refused growth.
func heldAsTheyRun(specs []host.Service, byEngine map[string][]dd.ContainerSummary) []host.Service {
	kept := specs[:0:0]
	for _, s := range specs {
		if len(byEngine[s.Engine.Name()]) > 0 {
			s.Hold = true
			kept = append(kept, s)
		}
	}
	return kept
}

// removeDropped removes the containers of services no longer in spec; the others
// are left alone. One Docker cannot remove (dead) holds nothing back: it is
// retried on its own backoff, and retry says when.
func (r *Reconciler) removeDropped(ctx context.Context, sb *sandboxv1.Sandbox, specs []host.Service, byEngine map[string][]dd.ContainerSummary) (retry time.Duration, err error) {
	now := time.Now()
	for name, cs := range byEngine {
		if slices.ContainsFunc(specs, func(s host.Service) bool { return s.Engine.Name() == name }) {
			continue
		}
		for _, c := range cs {
			if wait := r.recalls.asideDue(sb, c.ID, now); wait > 0 {
				retry = kit.Soonest(retry, wait)
				continue
			}
			got, err := r.Host.Retire(ctx, c, "")
			if err != nil {
				return 0, fmt.Errorf("removing %s, no longer in spec: %w", c.Name, err)
			}
			if got.Stuck != nil {
				wait := r.recalls.asideFailed(sb, c.ID, now)
				retry = kit.Soonest(retry, wait)
				logf.FromContext(ctx).Info("Docker cannot remove a container no longer in spec; retrying", "container", c.Name,
					"error", got.Stuck.Error(), "retryIn", wait.Round(time.Second))
				continue
			}
			r.recalls.asideGone(sb, c.ID)
			r.Host.ReleaseSeedLane(r.seedLane(sb, name))
			r.Recorder.Eventf(sb, nil, corev1.EventTypeNormal, sandboxv1.EventServiceRemoved, sandboxv1.ActionTeardown,
				"removed %s: %s is no longer in spec.services", c.Name, name)
		}
	}
	return retry, nil
}

// runServices reconciles every service at once; each result is redacted of its
// password.
func (r *Reconciler) runServices(ctx context.Context, sb *sandboxv1.Sandbox, specs []host.Service, blocked map[string]string,
	byEngine map[string][]dd.ContainerSummary, reserved map[string]host.Member) []serviceResult {
	prev := map[string]sandboxv1.ServiceStatus{}
	for _, s := range sb.Status.Services {
		prev[string(s.Engine)] = s
	}
	results := make([]serviceResult, len(specs))
	var wg sync.WaitGroup
	for i, svc := range specs {
		name := svc.Engine.Name()
		w := serviceWork{sb: sb, svc: svc, prev: prev[name], initBlocked: blocked[name]}
		if m, ok := reserved[name]; ok {
			w.reserved = &m
		}
		wg.Go(func() {
			results[i] = r.serviceData(ctx, w, w.initNote(r.reconcileService(ctx, w, byEngine[name]))).redacted(svc.Password)
		})
	}
	wg.Wait()
	return results
}

// passResult is when the services want another look: the soonest any asked for,
// a stalled one after the slow recheck (an event brings it back sooner when what
// blocks it goes), none of them cutting the others' short; when none asked, the
// jittered resync. A failed Docker call adds the Sandbox's backoff (pace).
func passResult(results []serviceResult, resync time.Duration) ctrl.Result {
	var after time.Duration
	for _, res := range results {
		want := res.requeue
		if res.stalled {
			want = kit.Soonest(want, kit.Jitter(kit.StalledRecheck))
		}
		after = kit.Soonest(after, want)
	}
	if after == 0 {
		after = kit.Jitter(resync)
	}
	return ctrl.Result{RequeueAfter: after}
}
