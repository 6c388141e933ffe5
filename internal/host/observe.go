package host

import (
	"context"
	"errors"
	"fmt"
	"strings"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// Phase is where the container serving a service stands.
type Phase string

const (
	// Absent: no container serves the service, and none was known to.
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
	// Current is the container that serves the service as wanted (nil when
	// Absent or Vanished).
	Current *dd.ContainerSummary
	// Stopped is Current as inspected, when Phase is Stopped.
	Stopped dd.Container
	// Outdated are containers of the service that do not serve it as wanted
	// (another name, or made with something a running container cannot change).
	Outdated []Outdated
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
		why, err := h.judge(ctx, svc.Container, c)
		if err != nil {
			return obs, err
		}
		if why != "" {
			obs.Outdated = append(obs.Outdated, Outdated{ContainerSummary: *c, Why: why})
			continue
		}
		obs.Current = c
	}
	return h.phase(ctx, obs, knownID)
}

// judge says why c does not serve want ("": it does). The fingerprint label
// answers for an unchanged container without asking Docker; otherwise Docker's
// record of what c was made with is compared with want.
func (h *Host) judge(ctx context.Context, want dd.ContainerSpec, c *dd.ContainerSummary) (string, error) {
	if c.Name != want.Name {
		return "named " + c.Name + ", not " + want.Name, nil
	}
	if c.Labels[LabelConfigHash] == want.Labels[LabelConfigHash] {
		return "", nil
	}
	made, err := h.driver.Inspect(ctx, c.ID)
	switch {
	case errors.Is(err, dd.ErrNotFound):
		return "gone", nil
	case err != nil:
		return "", fmt.Errorf("inspecting %s: %w", c.Name, err)
	}
	if diffs := Differences(want, made); len(diffs) > 0 {
		return strings.Join(diffs, "; "), nil
	}
	return "", nil
}

// phase classifies the current container, inspecting it when it does not run.
func (h *Host) phase(ctx context.Context, obs Observation, knownID string) (Observation, error) {
	c := obs.Current
	switch {
	case c == nil && knownID != "":
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
