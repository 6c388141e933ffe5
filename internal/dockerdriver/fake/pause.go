package fake

import (
	"fmt"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// Pause freezes a running container as `docker pause` does: it keeps its address
// and state, and emits a pause event.
func (f *Driver) Pause(nameOrID string) error {
	return f.setPaused(nameOrID, dd.StateRunning, dd.StatePaused, dd.EventPause)
}

// Unpause resumes a paused container, emitting an unpause event.
func (f *Driver) Unpause(nameOrID string) error {
	return f.setPaused(nameOrID, dd.StatePaused, dd.StateRunning, dd.EventUnpause)
}

func (f *Driver) setPaused(nameOrID string, from, to dd.State, ev dd.EventType) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.resolve(nameOrID)
	if c == nil {
		return noSuchContainer(string(ev), nameOrID)
	}
	if c.c.State != from {
		return dd.NewError(string(ev), nameOrID, dd.ErrConflict, fmt.Errorf("container is %s, not %s", c.c.State, from))
	}
	c.c.State = to
	f.emit(c, ev, 0)
	return nil
}
