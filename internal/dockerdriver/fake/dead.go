package fake

import (
	"fmt"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// WedgeRemoval leaves a container as a daemon restart during its exit can: its
// root filesystem still mounted, so Docker's removal fails and marks it dead.
// From now on the container is dead (a running one dies first, with a die event)
// and every Remove of it fails with Docker's words (dd.ErrRemovalStuck), under any
// name it is given later; Rename, Inspect and List still work. release lets the
// mount go: removals succeed again, and the container stays dead until removed.
func (f *Driver) WedgeRemoval(nameOrID string) (release func(), err error) {
	f.mu.Lock()
	c := f.resolve(nameOrID)
	if c == nil {
		f.mu.Unlock()
		return nil, noSuchContainer("wedge", nameOrID)
	}
	f.exit(c, 255, false)
	c.c.State = dd.StateDead
	id := c.c.ID
	f.mu.Unlock()
	cause := fmt.Errorf(`Error response from daemon: driver "overlay2" failed to remove root filesystem for %s: `+
		`unlinkat /var/lib/docker/overlay2/%s/merged: device or resource busy`, id, dd.ShortID(id))
	return f.Inject(Fault{Verb: VerbRemove, Ref: id, Err: dd.NewError("remove", id, dd.ErrRemovalStuck, cause)}), nil
}
