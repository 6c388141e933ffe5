package host

import (
	"context"
	"errors"
	"maps"
	"strconv"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// Ensured is what Ensure achieved.
type Ensured struct {
	// Pull is the image's state; the container exists only when Pull.Present.
	Pull PullState
	// Container is the created (or adopted) and started container.
	Container dd.Container
	// Taken is set when the service's name is held by a container not proven
	// ours: the caller decides whether it is stale.
	Taken *dd.ConflictError
}

// Ensure makes the service's container exist and run: the image through the
// shared pull (waiter is told when a pull it waits for ends), then create and
// start, carrying restarts in its labels. A container of ours by that name is
// adopted (and started).
func (h *Host) Ensure(ctx context.Context, svc Service, restarts int32, waiter string) (Ensured, error) {
	var out Ensured
	if out.Pull = h.pulls.Ensure(ctx, svc.Image(), waiter); !out.Pull.Present {
		return out, nil
	}
	spec := svc.Container
	spec.Labels = maps.Clone(spec.Labels)
	spec.Labels[LabelRestarts] = strconv.Itoa(int(restarts))
	c, err := h.driver.CreateContainer(ctx, spec)
	if errors.As(err, &out.Taken) {
		return out, nil
	}
	out.Container = c
	return out, err
}

// Inspect reads a container as Docker reports it.
func (h *Host) Inspect(ctx context.Context, id string) (dd.Container, error) {
	return h.driver.Inspect(ctx, id)
}

// Remove stops and removes a container with its anonymous volumes; absent is success.
func (h *Host) Remove(ctx context.Context, id string) error {
	h.warm.release(id)
	h.started.forget(id)
	return h.driver.Remove(ctx, id, h.stopTimeout)
}
