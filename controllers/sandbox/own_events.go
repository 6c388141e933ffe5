package sandbox

import (
	"context"
	"errors"
	"sync"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// ownEventTTL is how long an event of our own action is expected. Docker delivers
// them within milliseconds; an expectation whose event was lost (the stream broke,
// and its resync re-queues everything anyway) must not hide a later one for long.
const ownEventTTL = time.Minute

// ownActions remembers the Docker actions this manager took, so that the Docker
// watch can tell their events from a change it must react to. Without it a
// container whose start fails (Docker creates it, refuses to start it, and the
// driver removes it: events create, destroy) re-queued its Sandbox at once, ahead
// of any backoff, forever.
//
// Note: only die, oom and destroy of our containers matter to the watch (create
// and start are always our own doing); what is tracked here is which of those we
// caused: the removals we asked for (by container ID) and the containers the
// driver removed after a failed start (by name: their ID is never returned).
type ownActions struct {
	mu sync.Mutex
	// removing are container IDs we remove: their die and destroy are ours.
	removing map[string]time.Time
	// creating are container names being created: a destroy of that name (with our
	// labels) is the driver removing what it made and could not start.
	creating map[string]time.Time
	// renaming are container IDs we rename (claims): their rename is ours, and
	// the pass that made it re-queues the member's pool once it has written.
	renaming map[string]time.Time
}

func newOwnActions() *ownActions {
	return &ownActions{removing: map[string]time.Time{}, creating: map[string]time.Time{}, renaming: map[string]time.Time{}}
}

// wrap returns driver with its removals and failed creates remembered.
func (o *ownActions) wrap(driver dd.Driver) dd.Driver { return ownDriver{Driver: driver, own: o} }

// caused reports whether ev (of one of our containers) is the doing of an action
// this manager took; a destroy consumes its expectation.
func (o *ownActions) caused(ev dd.Event) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.prune(time.Now())
	switch ev.Type {
	case dd.EventCreate, dd.EventStart:
		return true
	case dd.EventDie, dd.EventOOM:
		_, ours := o.removing[ev.ID]
		return ours
	case dd.EventRename:
		_, ours := o.renaming[ev.ID]
		delete(o.renaming, ev.ID)
		return ours
	case dd.EventDestroy:
		if _, ours := o.removing[ev.ID]; ours {
			delete(o.removing, ev.ID)
			return true
		}
		if _, ours := o.creating[ev.Name]; ours {
			delete(o.creating, ev.Name)
			return true
		}
	}
	return false
}

func (o *ownActions) expect(m map[string]time.Time, key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	m[key] = time.Now()
}

func (o *ownActions) forget(m map[string]time.Time, key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(m, key)
}

// prune drops expectations past ownEventTTL. Callers hold o.mu.
func (o *ownActions) prune(now time.Time) {
	for _, m := range []map[string]time.Time{o.removing, o.creating, o.renaming} {
		for k, at := range m {
			if now.Sub(at) > ownEventTTL {
				delete(m, k)
			}
		}
	}
}

// ownDriver is a driver whose removals and failed creates are remembered in own.
type ownDriver struct {
	dd.Driver
	own *ownActions
}

// Remove expects the die and destroy of nameOrID, which callers give as an ID.
func (d ownDriver) Remove(ctx context.Context, nameOrID string, stopTimeout time.Duration) error {
	d.own.expect(d.own.removing, nameOrID)
	return d.Driver.Remove(ctx, nameOrID, stopTimeout)
}

// Rename expects the rename of nameOrID, which callers give as an ID.
func (d ownDriver) Rename(ctx context.Context, nameOrID, newName string) error {
	d.own.expect(d.own.renaming, nameOrID)
	return d.Driver.Rename(ctx, nameOrID, newName)
}

// CreateContainer expects a destroy of the name while it runs (it may come before
// the call returns), and keeps expecting it when the create failed.
func (d ownDriver) CreateContainer(ctx context.Context, spec dd.ContainerSpec) (dd.Container, error) {
	d.own.expect(d.own.creating, spec.Name)
	c, err := d.Driver.CreateContainer(ctx, spec)
	var taken *dd.ConflictError
	if err == nil || errors.As(err, &taken) {
		// Made, or held by another container, whose destroy is not ours to hide.
		d.own.forget(d.own.creating, spec.Name)
	}
	return c, err
}
