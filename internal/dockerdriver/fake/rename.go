package fake

import (
	"context"
	"errors"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// Rename gives a container a new name; see dd.Driver.Rename. Faults may name the
// container or the new name.
func (f *Driver) Rename(ctx context.Context, nameOrID, newName string) error {
	if err := f.enter(ctx, VerbRename, append(f.refsOf(nameOrID), newName)...); err != nil {
		return err
	}
	if err := dd.ValidateRename(nameOrID, newName); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.resolve(nameOrID)
	switch {
	case c == nil:
		return noSuchContainer("rename", nameOrID)
	case c.c.Name == newName:
		// Docker's refusal, a 400.
		return dd.NewError("rename", nameOrID, dd.ErrInvalid,
			errors.New("Error response from daemon: Renaming a container with the same name as its current name"))
	}
	if holder := f.resolveName(newName); holder != nil {
		return &dd.ConflictError{Name: newName, From: nameOrID, Existing: holder.snapshot()}
	}
	old := c.c.Name
	c.c.Name = newName
	e := newEvent(c, dd.EventRename, 0) // under the new name, as Docker's

	e.OldName = old
	f.deliver(e)
	return nil
}
