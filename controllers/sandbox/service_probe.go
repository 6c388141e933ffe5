package sandbox

import (
	"context"
	"fmt"
	"slices"
	"time"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/class"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
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
