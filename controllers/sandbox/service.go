package sandbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/class"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// Pacing of a service that waits.
const (
	pullPollInterval = 5 * time.Second
	// createPollInterval backs up the word that a create beside the pass ended.
	createPollInterval = 5 * time.Second
	// pausedRecheck backs the unpause event up.
	pausedRecheck = time.Minute
)

// reconcileService drives one service one step further, after what the host layer
// observes of it: container, then probe, then features. ours are this Sandbox's
// containers of the service's engine.
func (r *Reconciler) reconcileService(ctx context.Context, w serviceWork, ours []dd.ContainerSummary) serviceResult {
	res := newServiceResult(w)
	if r.Host.CreatePending(w.svc) && w.initBlocked != "" {
		return w.unseeded(res) // Note: the create goes on; its end wakes the Sandbox.
	}
	if r.Host.CreatePending(w.svc) {
		// Note: its container may be listed half made (created, not started):
		// the create's own end says what it made.
		return r.ensureService(ctx, w, res)
	}
	obs, err := r.Host.Observe(ctx, w.svc, ours, w.prev.ContainerID)
	if err != nil {
		return res.dockerFailed(ctx, err, "observing "+w.svc.Container.Name)
	}
	res.current = !w.svc.Hold && len(obs.Outdated) == 0 && len(obs.Aside) == 0 && obs.Behind == ""
	for _, c := range obs.Outdated {
		if done, err := r.retire(ctx, w, c.ContainerSummary, &res); err != nil {
			return res.dockerFailed(ctx, err, "removing the outdated container "+c.Name)
		} else if done {
			res.event(sandboxv1.EventUpdated, fmt.Sprintf("%s: replacing container %s to apply the new spec (%s)", w.svc.Engine.Name(), c.Name, c.Why))
		}
	}
	r.removeAside(ctx, w, obs.Aside, &res)
	res.status.Restarts = max(res.status.Restarts, obs.Restarts)
	if obs, err = r.rollOut(ctx, w, obs, &res); err != nil {
		return res.dockerFailed(ctx, err, "rolling out "+w.svc.Container.Name)
	}
	if w.svc.Hold && obs.Phase != host.Running && obs.Phase != host.Paused {
		return w.heldBack(obs.Phase, res)
	}
	switch obs.Phase {
	case host.Stopped:
		return r.recreateStopped(ctx, w, obs.Stopped, res)
	case host.Vanished:
		res.event(sandboxv1.EventRecreated, fmt.Sprintf("%s: container %s vanished; recreating it with the same credentials", w.svc.Engine.Name(), w.svc.Container.Name))
		res.status.Restarts++
		return r.provisionService(ctx, w, res)
	case host.Absent:
		return r.provisionService(ctx, w, res)
	case host.Created:
		return r.ensureService(ctx, w, res)
	case host.Paused:
		res.status.ContainerID = obs.Current.ID
		return res.waiting(part{reason: sandboxv1.ReasonPaused, message: fmt.Sprintf(
			"container %s is paused: it is left as it is; docker unpause resumes it", obs.Current.Name)},
			w.svc.Engine.Name()+" is paused", pausedRecheck)
	}
	if w.initBlocked != "" && !settled(w, obs.Current.ID) {
		res.status.ContainerID = obs.Current.ID
		return w.unseeded(res)
	}
	if settled(w, obs.Current.ID) {
		res.status = w.prev
		res.status.Version = w.svc.Version
		res.containers, res.probes = okPart(sandboxv1.ReasonRunning), okPart(sandboxv1.ReasonReady)
		res.behind(obs.Behind)
		return res
	}
	c, err := r.Host.Inspect(ctx, obs.Current.ID)
	if err != nil {
		return res.dockerFailed(ctx, err, "inspecting "+obs.Current.Name)
	}
	res.behind(obs.Behind)
	return r.serviceRunning(ctx, w, c, res)
}

// rollOut replaces a running container behind the operator's settings when the
// Sandbox's update strategy asks for it; otherwise it is kept, with its data,
// and reported behind. A rollout is no restart.
func (r *Reconciler) rollOut(ctx context.Context, w serviceWork, obs host.Observation, res *serviceResult) (host.Observation, error) {
	if obs.Behind == "" || obs.Current == nil || obs.Phase == host.Stopped || w.svc.Hold || !r.Options.RollsOut(w.sb) && !initFailed(w) {
		return obs, nil
	}
	if _, err := r.retire(ctx, w, *obs.Current, res); err != nil {
		return obs, err
	}
	res.event(sandboxv1.EventRolledOut, fmt.Sprintf("%s: replacing container %s, made with earlier operator settings (%s); its data goes",
		w.svc.Engine.Name(), obs.Current.Name, obs.Behind))
	obs.Current, obs.Behind, obs.Phase = nil, "", host.Absent
	return obs, nil
}

// initFailed: the service's init scripts failed on its container (which
// holds no data worth keeping): new scripts replace it whatever the strategy.
func initFailed(w serviceWork) bool {
	c := meta.FindStatusCondition(w.sb.Status.Conditions, sandboxv1.ConditionServicesReady)
	return !w.prev.Ready && c != nil && c.Reason == sandboxv1.ReasonInitFailed
}

func newServiceResult(w serviceWork) serviceResult {
	e := w.svc.Engine
	return serviceResult{images: okPart(sandboxv1.ReasonPresent), upToDate: okPart(sandboxv1.ReasonUpToDate), status: sandboxv1.ServiceStatus{
		Engine:        sandboxv1.Engine(e.Name()),
		ContainerName: w.svc.Container.Name,
		Image:         w.svc.Image(),
		Version:       w.svc.Version,
		Host:          engine.HostName(e, w.sb.Spec.AgentID),
		Port:          int32(e.Port()),
		Restarts:      w.prev.Restarts,
	}}
}

// settled: the running container already answered, with these features; nothing
// to ask Docker.
func settled(w serviceWork, currentID string) bool {
	return w.prev.Ready && w.prev.ContainerID == currentID && slices.Equal(class.FeatureStrings(w.prev.Features), w.svc.Features)
}

// recreateStopped waits out the restart backoff of a container that stopped, then
// removes it and makes it again with the same credentials.
func (r *Reconciler) recreateStopped(ctx context.Context, w serviceWork, c dd.Container, res serviceResult) serviceResult {
	exitMsg := r.Host.ExitMessage(ctx, c)
	if wait := host.Delay(host.RestartBackoff, int(res.status.Restarts)) - time.Since(c.FinishedAt); wait > 0 {
		res.status.ContainerID = c.ID
		return res.waiting(part{reason: sandboxv1.ReasonExited, message: exitMsg + fmt.Sprintf("; recreating in %s", wait.Round(time.Second))},
			w.svc.Engine.Name()+" is not running", wait)
	}
	if _, err := r.retire(ctx, w, dd.ContainerSummary{ID: c.ID, Name: c.Name}, &res); err != nil {
		return res.dockerFailed(ctx, err, "removing the exited container "+c.Name)
	}
	res.event(sandboxv1.EventRecreated, exitMsg+"; recreating it with the same credentials")
	res.status.Restarts++
	return r.provisionService(ctx, w, res)
}

// provisionService serves a service that has no container: a warm pool member
// when one matches, else a cold container.
func (r *Reconciler) provisionService(ctx context.Context, w serviceWork, res serviceResult) serviceResult {
	switch held, err := r.nameHeld(ctx, w.sb, w.svc.Engine); {
	case err != nil:
		return res.dockerFailed(ctx, err, "checking the names of "+w.svc.Container.Name)
	case held != "":
		return res.conflict(held)
	}
	if claimed, ok := r.claimService(ctx, w, res); ok {
		return claimed
	}
	return r.ensureService(ctx, w, res)
}

// ensureService makes the container exist and run (the image first, pulled off the
// worker), then goes on with it.
func (r *Reconciler) ensureService(ctx context.Context, w serviceWork, res serviceResult) serviceResult {
	engine := w.svc.Engine.Name()
	if wait, why := r.recalls.createWait(w.sb, engine); wait > 0 && !r.Host.CreatePending(w.svc) {
		waitOut(ctx)
		return res.waiting(why, engine+" is not running", wait)
	}
	waiter := types.NamespacedName{Namespace: w.sb.Namespace, Name: w.sb.Name}.String()
	got, err := r.Host.Ensure(ctx, w.svc, res.status.Restarts, waiter)
	if err != nil && got.Taken == nil {
		res = res.dockerFailed(ctx, err, "creating "+w.svc.Container.Name)
		if !res.stalled {
			r.recalls.createFailed(w.sb, engine, retryLater(ctx), res.containers)
		}
		return res
	}
	r.recalls.createDone(w.sb, engine)
	image := w.svc.Image()
	switch pull := got.Pull; {
	case pull.Err != nil && !errors.Is(pull.Err, dd.ErrPullFailed):
		// Docker did not say whether the image is present: a failed Docker call.
		res = res.dockerFailed(ctx, pull.Err, "looking up image "+image)
		res.images = res.containers
		return res
	case pull.Err != nil:
		res.images = part{reason: sandboxv1.ReasonPullFailed, message: pull.Err.Error() + fmt.Sprintf("; retrying in %s", pull.RetryIn.Round(time.Second))}
		if errors.Is(pull.Err, dd.ErrUnavailable) {
			res.images.reason = sandboxv1.ReasonDockerUnavailable
		}
		return res.waiting(part{reason: sandboxv1.ReasonCreating, message: "waiting for image " + image}, "waiting for image "+image, pull.RetryIn)
	case !pull.Present:
		res.images = part{reason: sandboxv1.ReasonPulling, message: pull.Describe(image)}
		return res.waiting(part{reason: sandboxv1.ReasonCreating, message: "waiting for image " + image}, "waiting for image "+image, pullPollInterval)
	case got.Creating > 0:
		return res.waiting(part{reason: sandboxv1.ReasonCreating, message: fmt.Sprintf("creating %s (%s)", w.svc.Container.Name, got.Creating.Round(100*time.Millisecond))},
			w.svc.Engine.Name()+" is not running", createPollInterval)
	case got.Taken != nil:
		return r.nameConflict(ctx, w.sb, res, got.Taken)
	}
	return r.serviceRunning(ctx, w, got.Container, res)
}

// serviceRunning goes on with a container that exists: once it runs and has an
// address, it is probed.
func (r *Reconciler) serviceRunning(ctx context.Context, w serviceWork, c dd.Container, res serviceResult) serviceResult {
	res.status.ContainerID = c.ID
	if c.State != dd.StateRunning {
		return res.waiting(part{reason: sandboxv1.ReasonCreating, message: fmt.Sprintf("%s is %s", c.Name, c.State)},
			w.svc.Engine.Name()+" is not running", r.recalls.notRunning(w.sb, w.svc.Engine.Name(), c.ID))
	}
	res.containers = okPart(sandboxv1.ReasonRunning)
	if w.prev.ContainerID != c.ID {
		res.status.Ready = false
	}
	addr := host.Address(c, w.svc.Network)
	if addr == "" {
		res.probes = part{reason: sandboxv1.ReasonProbing, message: "waiting for " + c.Name + " to get an address"}
		res.after(r.recalls.notRunning(w.sb, w.svc.Engine.Name(), c.ID))
		return res
	}
	if w.svc.Network == "" {
		res.status.Host = addr // the default bridge has no DNS for container names
	}
	return r.probeService(ctx, w, c, addr, res)
}
