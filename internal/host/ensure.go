package host

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"strings"
	"time"

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
	// Creating is how long the container's create has gone on beside the
	// passes (0: it ended); its waiter is told when it ends.
	Creating time.Duration
}

// Ensure makes the service's container exist and run: the image through the
// shared pull, then create and start, carrying restarts in its labels. A
// container of ours by that name is adopted (and started). Neither holds the
// caller: a pull, and a create that outlasts InlineCreateWait, go on beside
// the passes, and waiter is told when they end.
func (h *Host) Ensure(ctx context.Context, svc Service, restarts int32, waiter string) (Ensured, error) {
	var out Ensured
	if out.Pull = h.pulls.Ensure(ctx, svc.Image(), waiter); !out.Pull.Present {
		return out, nil
	}
	spec := svc.Container
	spec.Labels = maps.Clone(spec.Labels)
	spec.Labels[LabelRestarts] = strconv.Itoa(int(restarts))
	cr := h.creates.join(dd.CarryProof(h.pulls.background(), ctx), spec, waiter, h.driver.CreateContainer, h.pulls.notify)
	if !h.creates.await(ctx, cr, InlineCreateWait) {
		out.Creating = max(time.Since(cr.started), time.Millisecond)
		return out, nil
	}
	if errors.As(cr.err, &out.Taken) {
		return out, nil
	}
	out.Container = cr.c
	return out, cr.err
}

// CreatePending says whether the service's container has a create under way
// beside the passes, or one ended that no pass has taken: the pass goes on
// through Ensure, not from what it lists.
func (h *Host) CreatePending(svc Service) bool {
	return h.creates.pending(svc.Container.Name, svc.Container.Labels[svc.Container.OwnerLabel])
}

// CancelCreates cuts short the creates under way of owner's containers (a
// deleted Sandbox's: the owner label's value), and counts them: the caller
// waits for their ends (each removes what it made) before it lets go.
func (h *Host) CancelCreates(owner string) int {
	return h.creates.cancelWhere(func(cr *creation) bool { return cr.owner == owner })
}

// MemberCreates names the creates under way of the containers named with
// prefix (a pool's members), and takes the failures of those that ended.
func (h *Host) MemberCreates(prefix string) (underway map[string]bool, failed []error) {
	return h.creates.prefixed(prefix)
}

// CancelMemberCreates cuts short the creates under way of the containers named
// with prefix (a deleted pool's members), and counts them.
func (h *Host) CancelMemberCreates(prefix string) int {
	return h.creates.cancelWhere(func(cr *creation) bool { return strings.HasPrefix(cr.name, prefix) })
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
