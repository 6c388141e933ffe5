package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// Phase is where the container serving a service stands.
type Phase string

const (
	// Absent: no container serves the service, and none was known to (or the
	// one known is being replaced).
	Absent Phase = "Absent"
	// Vanished: the container the caller knew of is gone.
	Vanished Phase = "Vanished"
	// Created: the container exists and was never started.
	Created Phase = "Created"
	// Running: the container runs.
	Running Phase = "Running"
	// Paused: the container was paused (docker pause): frozen, not ended, so
	// nothing to replace.
	Paused Phase = "Paused"
	// Stopped: the container exists and does not run (exited, dead,
	// restarting); Observation.Stopped holds it as inspected.
	Stopped Phase = "Stopped"
)

// Observation is what exists of one service on the host.
type Observation struct {
	Phase Phase
	// Current is the container that serves the service (nil when Absent or
	// Vanished).
	Current *dd.ContainerSummary
	// Behind, when not empty, says how Current differs from what the operator's
	// settings would make now: it serves the Sandbox's spec and is kept until a
	// rollout replaces it.
	Behind string
	// Stopped is Current as inspected, when Phase is Stopped.
	Stopped dd.Container
	// Outdated are containers of the service that do not serve it (another
	// name, or made for another spec or other credentials): to be replaced.
	Outdated []Outdated
	// Aside are containers of the service set aside when Docker could not remove
	// them (see Retire): never the service, only to remove.
	Aside []dd.ContainerSummary
	// Restarts is the restart count Current was created with.
	Restarts int32
}

// Outdated is a container to replace, and why.
type Outdated struct {
	dd.ContainerSummary
	Why string
}

// Observe judges ours (the containers of this service's Sandbox and engine) against
// svc. knownID is the container the caller last saw serving it ("": none).
func (h *Host) Observe(ctx context.Context, svc Service, ours []dd.ContainerSummary, knownID string) (Observation, error) {
	var obs Observation
	for i := range ours {
		c := &ours[i]
		if IsAside(c.Name, svc.Container.Name) {
			obs.Aside = append(obs.Aside, *c)
			continue
		}
		j, err := h.judge(ctx, svc, c)
		if err != nil {
			return obs, err
		}
		if j.replace {
			obs.Outdated = append(obs.Outdated, Outdated{ContainerSummary: *c, Why: j.why})
			continue
		}
		obs.Current, obs.Behind = c, j.why
	}
	// Note: a known container still there, only outdated, did not vanish: its
	// replacement is no restart.
	known := slices.ContainsFunc(ours, func(c dd.ContainerSummary) bool { return c.ID == knownID })
	return h.phase(ctx, obs, knownID != "" && !known)
}

// judgement is what judge made of one container: to replace (the spec or the
// credentials changed), or to keep, behind the operator's settings when why is set.
type judgement struct {
	replace bool
	why     string
}

// judge says what to do with c. The fingerprint label answers for an unchanged
// container without asking Docker; otherwise Docker's record of what c was made
// with is compared with svc, once per container and wanted fingerprint (what a
// container was made with never changes).
func (h *Host) judge(ctx context.Context, svc Service, c *dd.ContainerSummary) (judgement, error) {
	if c.Labels[LabelPoolUID] != "" {
		return h.judgeClaimed(ctx, svc, c)
	}
	want := svc.Container
	if c.Name != want.Name {
		return judgement{replace: true, why: "named " + c.Name + ", not " + want.Name}, nil
	}
	if c.Labels[LabelConfigHash] == want.Labels[LabelConfigHash] {
		return judgement{}, nil
	}
	return h.judgeMade(ctx, svc, c)
}

// judgeMade compares Docker's record of what c was made with against svc, once
// per container and wanted fingerprint (what a container was made with never
// changes).
func (h *Host) judgeMade(ctx context.Context, svc Service, c *dd.ContainerSummary) (judgement, error) {
	key := judgedKey(c.ID, svc)
	if j, ok := h.judged.get(key); ok {
		return j, nil
	}
	made, err := h.driver.Inspect(ctx, c.ID)
	switch {
	case errors.Is(err, dd.ErrNotFound):
		return judgement{replace: true, why: "gone"}, nil
	case err != nil:
		return judgement{}, fmt.Errorf("inspecting %s: %w", c.Name, err)
	}
	var j judgement
	var words []string
	for _, d := range Differences(svc, made) {
		j.replace = j.replace || d.Cause == CauseSpec && !svc.Hold
		words = append(words, d.What)
	}
	j.why = strings.Join(words, "; ")
	h.judged.put(key, j)
	return j, nil
}

// phase classifies the current container, inspecting it when it does not run.
func (h *Host) phase(ctx context.Context, obs Observation, vanished bool) (Observation, error) {
	c := obs.Current
	switch {
	case c == nil && vanished:
		obs.Phase = Vanished
		return obs, nil
	case c == nil:
		obs.Phase = Absent
		return obs, nil
	}
	// Note: the restart count lives on the container (a label set at creation), not
	// only in the caller's status, which may be read stale.
	obs.Restarts = Restarts(c.Labels)
	switch c.State {
	case dd.StateRunning:
		obs.Phase = Running
		return obs, nil
	case dd.StateCreated:
		obs.Phase = Created
		return obs, nil
	case dd.StatePaused:
		obs.Phase = Paused
		return obs, nil
	}
	inspected, err := h.driver.Inspect(ctx, c.ID)
	switch {
	case errors.Is(err, dd.ErrNotFound):
		obs.Current, obs.Phase = nil, Vanished
		return obs, nil
	case err != nil:
		return obs, fmt.Errorf("inspecting %s: %w", c.Name, err)
	}
	obs.Phase, obs.Stopped = Stopped, inspected
	return obs, nil
}
