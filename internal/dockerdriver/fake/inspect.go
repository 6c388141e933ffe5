package fake

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// Inspect returns one container by name or ID.
func (f *Driver) Inspect(ctx context.Context, nameOrID string) (dd.Container, error) {
	if err := f.enter(ctx, VerbInspect, f.refsOf(nameOrID)...); err != nil {
		return dd.Container{}, err
	}
	if nameOrID == "" {
		return dd.Container{}, dd.NewError("inspect", nameOrID, dd.ErrInvalid, errors.New("empty container name"))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.resolve(nameOrID)
	if c == nil {
		return dd.Container{}, noSuchContainer("inspect", nameOrID)
	}
	return c.snapshot(), nil
}

// List returns the containers carrying all labels, newest first, as Docker does.
func (f *Driver) List(ctx context.Context, labels map[string]string) ([]dd.ContainerSummary, error) {
	if err := f.enter(ctx, VerbList); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []dd.ContainerSummary{}
	for _, c := range f.containers {
		if !hasLabels(c.c.Labels, labels) {
			continue
		}
		out = append(out, dd.ContainerSummary{
			ID:        c.c.ID,
			Name:      c.c.Name,
			Image:     c.c.Image,
			Labels:    maps.Clone(c.c.Labels),
			State:     c.c.State,
			CreatedAt: c.c.CreatedAt.Truncate(time.Second), // Docker lists whole seconds
		})
	}
	slices.SortFunc(out, func(a, b dd.ContainerSummary) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Remove stops and removes the container and its anonymous volumes; absent is success.
func (f *Driver) Remove(ctx context.Context, nameOrID string, stopTimeout time.Duration) error {
	if err := f.enterWithin(ctx, VerbRemove, max(0, stopTimeout)+f.callTimeout, f.refsOf(nameOrID)...); err != nil {
		return err
	}
	if nameOrID == "" {
		return dd.NewError("remove", nameOrID, dd.ErrInvalid, errors.New("empty container name"))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.resolve(nameOrID); c != nil {
		f.destroy(c)
	}
	return nil
}

// snapshot is what Inspect reports: a copy the caller may keep.
func (c *ctr) snapshot() dd.Container {
	out := c.c
	out.Labels = maps.Clone(c.c.Labels)
	out.Env = slices.Clone(c.c.Env)
	out.Cmd = slices.Clone(c.c.Cmd)
	out.Tmpfs = maps.Clone(c.c.Tmpfs)
	out.SecurityOpt = slices.Clone(c.c.SecurityOpt)
	out.CapAdd, out.CapDrop = slices.Clone(c.c.CapAdd), slices.Clone(c.c.CapDrop)
	out.Mounts = slices.Clone(c.c.Mounts)
	out.Networks = make(map[string]dd.Endpoint, len(c.c.Networks))
	for k, v := range c.c.Networks {
		v.Aliases = slices.Clone(v.Aliases)
		out.Networks[k] = v
	}
	return out
}
