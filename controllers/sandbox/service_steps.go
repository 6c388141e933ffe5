package sandbox

import (
	"context"
	"fmt"
	"time"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// The steps that make a new container ready, in order (probeService): each
// answers the result and whether the service may go on to the next.

// answer runs the probe once (and, for a claimed member that does not
// answer, the rotation a crash cut short).
func (r *Reconciler) answer(ctx context.Context, w serviceWork, c dd.Container, addr string, claimed bool, res serviceResult) (serviceResult, bool) {
	e := w.svc.Engine
	p := r.Host.Probe(ctx, w.svc, c, addr)
	if p.Running {
		res.probes = part{reason: sandboxv1.ReasonProbing, message: e.Name() + ": " + p.Detail}
		res.after(p.Poll)
		return res, false
	}
	passed, detail := p.Passed, p.Detail
	if !passed && claimed {
		// A claim a crash cut short between its rename and its rotation, or
		// whose rotation runs on.
		var poll time.Duration
		if passed, detail, poll = r.rotateClaimed(ctx, w, c, addr); poll > 0 {
			return res.rotating(e.Name()+": "+detail, poll), false
		}
	}
	sandboxMetrics.probeAttempts.WithLabelValues(e.Name(), map[bool]string{true: "success", false: "failure"}[passed]).Inc()
	if !passed {
		return r.probeFailed(ctx, w, c, detail, res), false
	}
	return res, true
}

// enableFeatures enables and verifies the service's features.
func (r *Reconciler) enableFeatures(ctx context.Context, w serviceWork, c dd.Container, addr string, res serviceResult) (serviceResult, bool) {
	act := r.Host.Activate(ctx, w.svc, c, addr)
	switch {
	case act.Running:
		res.probes = part{reason: sandboxv1.ReasonProbing, message: act.Progress}
		res.after(act.Poll)
		return res, false
	case act.Failed != "":
		res.probes = part{reason: sandboxv1.ReasonFeatureVerifyFailed,
			message: fmt.Sprintf("%s; retrying in %s", act.Failed, retryLater(ctx).Round(time.Second))}
		return res, false
	}
	return res, true
}

// seed runs the service's init scripts, in a lane of the host's.
func (r *Reconciler) seed(ctx context.Context, w serviceWork, c dd.Container, addr string, res serviceResult) (serviceResult, bool) {
	e := w.svc.Engine
	seed := r.Host.Seed(ctx, w.svc, c, addr, r.seedLane(w.sb, e.Name()))
	switch {
	case seed.CutShort:
		return r.reseed(ctx, w, c, seed.Failed, res), false
	case seed.Failed != "":
		res.probes = part{reason: sandboxv1.ReasonInitFailed, message: fmt.Sprintf(
			"%s init script %s; it runs again, on a new container, once its ConfigMap, Secret or the spec changes", e.Name(), seed.Failed)}
		res.stalled = true
		return res, false
	case seed.Running:
		res.probes = part{reason: sandboxv1.ReasonSeeding, message: "Seeding: " + seed.Progress}
		res.after(seed.Poll)
		return res, false
	}
	return res, true
}

// snapshotInitial takes the state a reset returns to.
func (r *Reconciler) snapshotInitial(ctx context.Context, w serviceWork, c dd.Container, addr string, res serviceResult) (serviceResult, bool) {
	snap := r.Host.SnapshotInitial(ctx, w.svc, c, addr)
	switch {
	case snap.Running:
		res.probes = part{reason: sandboxv1.ReasonProbing, message: fmt.Sprintf(
			"taking the initial snapshot a reset returns to (running %s)", snap.For)}
		res.after(snap.Poll)
		return res, false
	case snap.Failed != "":
		res.probes = part{reason: sandboxv1.ReasonProbing, message: fmt.Sprintf(
			"taking the initial snapshot a reset returns to: %s; retrying in %s", snap.Failed, retryLater(ctx).Round(time.Second))}
		return res, false
	}
	return res, true
}

// serviceReady reports the service ready, with its features.
func serviceReady(w serviceWork, alreadyAnswered bool, res serviceResult) serviceResult {
	res.status.Features = make([]sandboxv1.Feature, len(w.svc.Features))
	for i, f := range w.svc.Features {
		res.status.Features[i] = sandboxv1.Feature(f)
	}
	res.status.Ready = true
	res.probes = okPart(sandboxv1.ReasonReady)
	if !alreadyAnswered && w.prev.ContainerID == "" && res.status.Restarts == 0 {
		sandboxMetrics.timeToReady.WithLabelValues(w.svc.Engine.Name()).Observe(time.Since(w.sb.CreationTimestamp.Time).Seconds())
	}
	return res
}
