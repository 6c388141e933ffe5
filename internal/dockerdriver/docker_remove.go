package dockerdriver

import (
	"context"
	"errors"
	"fmt"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// Remove stops (SIGTERM, SIGKILL after stopTimeout), kills if stopping
// failed, then removes the container with its anonymous volumes.
func (d *Docker) Remove(ctx context.Context, nameOrID string, stopTimeout time.Duration) error {
	ctx, cancel, expired := Bound(ctx, max(0, stopTimeout)+d.opts.callTimeout)
	defer cancel()
	err := d.remove(ctx, nameOrID, stopTimeout)
	if err == nil {
		d.left.forget(nameOrID, "") // its execs went with it
	}
	return expired(err, "remove", nameOrID)
}

func (d *Docker) remove(ctx context.Context, nameOrID string, stopTimeout time.Duration) error {
	if nameOrID == "" {
		return NewError("remove", nameOrID, ErrInvalid, errors.New("empty container name"))
	}
	// Whole seconds, rounded up; never negative, which Docker reads as "wait forever".
	secs := max(0, int((stopTimeout+time.Second-1)/time.Second))
	_, err := d.cli.ContainerStop(ctx, nameOrID, client.ContainerStopOptions{Timeout: &secs})
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return wrap("remove", nameOrID, err)
		}
		// Stop can fail on a wedged container; a kill (and Force below)
		// still gets rid of it. A kill of a stopped container is a conflict.
		if _, kerr := d.cli.ContainerKill(ctx, nameOrID, client.ContainerKillOptions{}); cerrdefs.IsNotFound(kerr) {
			return nil
		}
	}
	_, err = d.cli.ContainerRemove(ctx, nameOrID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	switch {
	case err == nil, cerrdefs.IsNotFound(err):
		return nil
	case cerrdefs.IsConflict(err):
		// "removal already in progress": someone else is removing it; wait
		// for it to be gone so that success means gone.
		return d.waitGone(ctx, nameOrID)
	}
	return wrap("remove", nameOrID, err)
}

func (d *Docker) waitGone(ctx context.Context, nameOrID string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		_, err := d.cli.ContainerInspect(ctx, nameOrID, client.ContainerInspectOptions{})
		if cerrdefs.IsNotFound(err) {
			return nil
		}
		if err != nil && ctx.Err() == nil {
			return wrap("remove", nameOrID, err)
		}
		select {
		case <-ctx.Done():
			return NewError("remove", nameOrID, ErrTimeout, fmt.Errorf("waiting for another removal to finish: %w", ctx.Err()))
		case <-tick.C:
		}
	}
}
