package host

import (
	"context"
	"errors"
	"fmt"
	"strings"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// asideInfix joins a service's container name and a dead container's short ID in
// the name the dead container is set aside under.
const asideInfix = "-dead-"

// AsideName is the name a container Docker cannot remove is renamed to, freeing
// name for its service: <name>-dead-<short id>. The container keeps its labels,
// so it stays its Sandbox's (the UID proves it, never the name).
func AsideName(name, id string) string { return name + asideInfix + dd.ShortID(id) }

// IsAside says whether a container named name was set aside by the service whose
// container is named service.
func IsAside(name, service string) bool { return strings.HasPrefix(name, service+asideInfix) }

// Retired is what Retire did with a container Docker would not remove.
type Retired struct {
	// Stuck is Docker's refusal (nil: the container is gone).
	Stuck error
	// Aside is the name the container was renamed to ("" when it did not hold
	// the name to free, or is gone).
	Aside string
}

// Retire removes a container that serves no service any more. When Docker cannot
// (the container is dead: ErrRemovalStuck, or Docker reports it dead or being
// removed after the removal failed) and it holds free, it is renamed aside
// (AsideName), so that the service can be made anew under its name: a rename
// works where the removal does not. Another failure is returned as it is.
func (h *Host) Retire(ctx context.Context, c dd.ContainerSummary, free string) (Retired, error) {
	err := h.Remove(ctx, c.ID)
	if err == nil || !h.stuck(ctx, c.ID, err) {
		return Retired{}, err
	}
	out := Retired{Stuck: err}
	if free == "" || c.Name != free {
		return out, nil
	}
	out.Aside = AsideName(c.Name, c.ID)
	if rerr := h.driver.Rename(ctx, c.ID, out.Aside); rerr != nil {
		return Retired{}, fmt.Errorf("%w; renaming it aside to %s: %w", err, out.Aside, rerr)
	}
	return out, nil
}

// stuck says whether a failed removal of id left a container Docker cannot remove:
// by the error's kind, or, whatever the error (a removal that Docker's own retry
// holds, say), by the container's state.
func (h *Host) stuck(ctx context.Context, id string, err error) bool {
	if errors.Is(err, dd.ErrRemovalStuck) {
		return true
	}
	if errors.Is(err, dd.ErrUnavailable) {
		return false
	}
	c, ierr := h.driver.Inspect(ctx, id)
	return ierr == nil && (c.State == dd.StateDead || c.State == dd.StateRemoving)
}
