package sandbox

import (
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/controllers/sandbox/data"
	"github.com/roboco-sandbox/sandbox-controller/internal/class"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// probeService runs one bounded probe, then the steps that make a new
// container ready once it passes: its features, its seed, the initial
// snapshot. Each step runs beside the pass; one still running ends the pass.
func (r *Reconciler) probeService(ctx context.Context, w serviceWork, c dd.Container, addr string, res serviceResult) serviceResult {
	alreadyAnswered := w.prev.Ready && w.prev.ContainerID == c.ID
	claimed := c.Labels[host.LabelPoolUID] != ""
	// Note: a seed starts once the probe passed and the features verified.
	underway := !alreadyAnswered && r.Host.SeedUnderway(w.svc, c, addr)
	var ok bool
	if !alreadyAnswered && !underway {
		if res, ok = r.answer(ctx, w, c, addr, claimed, res); !ok {
			return res
		}
	}
	// Note: a claimed member's pool verified its features (they are its class).
	featuresVerified := claimed || underway || alreadyAnswered && slices.Equal(class.FeatureStrings(w.prev.Features), w.svc.Features)
	if len(w.svc.Features) > 0 && !featuresVerified {
		if res, ok = r.enableFeatures(ctx, w, c, addr, res); !ok {
			return res
		}
	}
	// Note: a claimed member was seeded by its pool (its class includes the scripts).
	fresh := !alreadyAnswered && !claimed
	if fresh && len(w.svc.Init) > 0 {
		if res, ok = r.seed(ctx, w, c, addr, res); !ok {
			return res
		}
	}
	if fresh {
		if res, ok = r.snapshotInitial(ctx, w, c, addr, res); !ok {
			return res
		}
	}
	return serviceReady(w, alreadyAnswered, res)
}

// probeFailed says the service has not answered yet, or that it did not answer in
// time, and paces the next probe accordingly (probeBackoff until the deadline, the
// Sandbox's backoff after it). The deadline is judged from this
// manager's attempts on the container (memory.probeFailed), not from its start: a
// Sandbox that waited in the queue has not been probed for that long.
func (r *Reconciler) probeFailed(ctx context.Context, w serviceWork, c dd.Container, detail string, res serviceResult) serviceResult {
	name, deadline := w.svc.Engine.Name(), w.svc.ProbeDeadline
	timedOut, since, next := r.recalls.probeFailed(w.sb, name, c.ID, deadline)
	if !timedOut {
		res.probes = part{reason: sandboxv1.ReasonProbing, message: fmt.Sprintf("%s has not answered yet (%s of %s): %s",
			name, time.Since(since).Round(time.Second), deadline, detail)}
		res.after(next)
		return res
	}
	// Past the deadline a probe is a retry like any other: it backs off.
	res.probes = part{reason: sandboxv1.ReasonProbeTimeout, message: fmt.Sprintf("%s did not answer within %s: %s; probing again in %s",
		name, deadline, detail, retryLater(ctx).Round(time.Second))}
	return res
}

// reseed replaces a container whose init run was cut short (its manager
// killed mid-run): its data is neither seeded nor clean, so a new container
// is seeded from the start.
func (r *Reconciler) reseed(ctx context.Context, w serviceWork, c dd.Container, why string, res serviceResult) serviceResult {
	if _, err := r.retire(ctx, w, dd.ContainerSummary{ID: c.ID, Name: c.Name}, &res); err != nil {
		return res.dockerFailed(ctx, err, "removing "+c.Name+", whose init scripts were cut short")
	}
	res.event(sandboxv1.EventRecreated, fmt.Sprintf("%s: %s on container %s; making it again", w.svc.Engine.Name(), why, c.Name))
	res.probes = part{reason: sandboxv1.ReasonProbing, message: why + "; making the container again"}
	res.after(time.Second)
	return res
}

// serviceData carries what earlier requests did to the service's data, and
// does spec.data's request once the service answers: in its container, as a
// step beside the passes (a pass starts it, a later one, woken by its end,
// records it; meanwhile the request reports it running). A failure is
// recorded, in the engine's words, and is not retried: the request is
// finished, the service serves as before.
func (r *Reconciler) serviceData(ctx context.Context, w serviceWork, res serviceResult) serviceResult {
	// Note: a copy, also where a settled service's status is prev's (its pointer).
	if w.prev.Data != nil && res.status.Engine == w.prev.Engine && (res.status.Data == nil || res.status.Data == w.prev.Data) {
		res.status.Data = w.prev.Data.DeepCopy()
	}
	if res.status.Data != nil {
		res.status.Data.Running = ""
	}
	req := data.Requested(w.sb, res.status.Engine, res.status.Data)
	if req == nil || !res.status.Ready {
		return res
	}
	op, event := data.Operation(req.Action)
	var run host.DataRun
	if ok, why := engine.Snapshots(w.svc.Engine); !ok && op != engine.OpReset {
		run.Failed = why
	} else if c, err := r.Host.Inspect(ctx, res.status.ContainerID); err != nil {
		return res.dockerFailed(ctx, err, "inspecting "+w.svc.Container.Name+" for spec.data")
	} else if run, err = r.Host.Data(ctx, w.svc, c, host.Address(c, w.svc.Network), op, req.Key()); err != nil {
		return res.dockerFailed(ctx, err, fmt.Sprintf("%s %s for spec.data", req.Action, w.svc.Container.Name))
	}
	if run.Running {
		if res.status.Data == nil {
			res.status.Data = &sandboxv1.ServiceData{}
		}
		res.status.Data.Running = fmt.Sprintf("%s running %s", op, run.For)
		res.after(run.Poll)
		return res
	}
	done := &sandboxv1.DataOperation{ID: req.ID, Generation: w.sb.Generation, Time: metav1.Now(),
		ContainerID: res.status.ContainerID, DurationMilliseconds: run.Took.Milliseconds()}
	res.status.Data = data.Record(res.status.Data, req, run.Failed, done)
	name := w.svc.Engine.Name()
	if run.Failed != "" {
		res.warn(sandboxv1.ReasonDataFailed, fmt.Sprintf("%s: %s %s failed: %s; the service serves as before", name, req.Action, req.ID, run.Failed))
		return res
	}
	res.event(event, fmt.Sprintf("%s: %s %s done in %s on container %s", name, req.Action, req.ID, run.Took.Round(time.Millisecond), w.svc.Container.Name))
	return res
}
