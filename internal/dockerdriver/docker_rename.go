package dockerdriver

import (
	"context"
	"errors"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// ValidateRename checks what both drivers require of a rename before touching
// Docker: a container to rename, and a new name by the rule created names
// follow (no leading "/", which Docker would accept but Container.Name never
// shows).
func ValidateRename(nameOrID, newName string) error {
	var problem string
	switch {
	case nameOrID == "":
		problem = "empty container name"
	case !validName.MatchString(newName):
		problem = fmt.Sprintf("invalid new name %q: want %s", newName, validName)
	default:
		return nil
	}
	return NewError("rename", nameOrID, ErrInvalid, errors.New(problem))
}

// Rename gives the container nameOrID the name newName; see Driver.Rename.
func (d *Docker) Rename(ctx context.Context, nameOrID, newName string) error {
	ctx, cancel, expired := Bound(ctx, d.opts.callTimeout)
	defer cancel()
	return expired(d.rename(ctx, nameOrID, newName), "rename", nameOrID)
}

func (d *Docker) rename(ctx context.Context, nameOrID, newName string) error {
	if err := ValidateRename(nameOrID, newName); err != nil {
		return err
	}
	// Docker answers a taken name with a bare 409; the holder is inspected to
	// report it as create does. It may be gone by then: two rounds.
	var err error
	for range 2 {
		_, err = d.cli.ContainerRename(ctx, nameOrID, client.ContainerRenameOptions{NewName: newName})
		if !cerrdefs.IsConflict(err) {
			return wrap("rename", nameOrID, err)
		}
		holder, ierr := d.inspect(ctx, newName)
		if errors.Is(ierr, ErrNotFound) {
			continue
		}
		if ierr != nil {
			return ierr
		}
		return &ConflictError{Name: newName, From: nameOrID, Existing: holder}
	}
	return wrap("rename", nameOrID, err)
}
