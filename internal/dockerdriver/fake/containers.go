package fake

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// ctr is one fake container.
type ctr struct {
	c        dd.Container
	script   Script
	scripted bool
	// gen changes with every start and exit, so that a timer armed for an
	// earlier run does nothing.
	gen  int
	logs []string // lines, each ending in "\n"
	// files were written into the container before its first start.
	files map[string][]byte
	// lingering is an exec that outlived its caller and may still run.
	lingering *lingering
	// startErr fails every start of it (a Sticks fault hit it).
	startErr error
}

// resolve finds a container the way Docker does: full ID, then exact
// name, then unique ID prefix. Callers hold f.mu.
func (f *Driver) resolve(nameOrID string) *ctr {
	if nameOrID == "" {
		return nil
	}
	if c, ok := f.containers[nameOrID]; ok {
		return c
	}
	for _, c := range f.containers {
		if c.c.Name == strings.TrimPrefix(nameOrID, "/") {
			return c
		}
	}
	var found *ctr
	for id, c := range f.containers {
		if strings.HasPrefix(id, nameOrID) {
			if found != nil {
				return nil
			}
			found = c
		}
	}
	return found
}

// refsOf is what faults may match for a call about nameOrID.
func (f *Driver) refsOf(nameOrID string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	refs := []string{nameOrID}
	if c := f.resolve(nameOrID); c != nil {
		refs = append(refs, c.c.Name, c.c.ID)
	}
	return refs
}

// CreateContainer creates and starts, or adopts; see dd.Driver.
func (f *Driver) CreateContainer(ctx context.Context, spec dd.ContainerSpec) (dd.Container, error) {
	if err := f.enter(ctx, VerbCreateContainer, spec.Name); err != nil {
		return dd.Container{}, err
	}
	if err := spec.Validate(); err != nil {
		return dd.Container{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if existing := f.resolveName(spec.Name); existing != nil {
		if !spec.Owns(existing.c) {
			return dd.Container{}, &dd.ConflictError{
				Name:       spec.Name,
				OwnerLabel: spec.OwnerLabel,
				Want:       spec.Labels[spec.OwnerLabel],
				Existing:   existing.snapshot(),
			}
		}
		if existing.c.State == dd.StateCreated {
			existing.write(spec.Files)
			if err := f.startFailure(existing); err != nil {
				f.destroy(existing) // as the real driver removes what it could not start
				return dd.Container{}, err
			}
			f.start(existing)
		}
		return existing.snapshot(), nil
	}
	c, err := f.create(spec)
	if err != nil {
		return dd.Container{}, err
	}
	if err := f.startFailure(c); err != nil {
		if c.startErr == nil {
			f.destroy(c) // as the real driver removes what it made and could not start
		}
		return dd.Container{}, err
	}
	c.write(spec.Files)
	f.start(c)
	return c.snapshot(), nil
}

func (f *Driver) resolveName(name string) *ctr {
	for _, c := range f.containers {
		if c.c.Name == name {
			return c
		}
	}
	return nil
}

// create makes a container in state created. Callers hold f.mu.
func (f *Driver) create(spec dd.ContainerSpec) (*ctr, error) {
	if spec.NanoCPUs > int64(f.cpus)*1e9 {
		return nil, dd.NewError("create", spec.Name, dd.ErrInvalid, fmt.Errorf(
			"Error response from daemon: Range of CPUs is from 0.01 to %d.00, as there are only %d CPUs available", f.cpus, f.cpus))
	}
	key, err := dd.NormalizeRef(spec.Image)
	if err != nil {
		return nil, dd.NewError("create", spec.Name, dd.ErrInvalid, err)
	}
	img, ok := f.images[key]
	if !ok {
		return nil, dd.NewError("create", spec.Name, dd.ErrNotFound,
			fmt.Errorf("Error response from daemon: No such image: %s", spec.Image))
	}
	// Note: a missing network is noticed at start, as Docker does (startFailure).
	network := cmp.Or(spec.Network, "bridge")
	id := randomID()
	env := slices.Clone(img.Env)
	if len(env) == 0 {
		env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	}
	c := &ctr{c: dd.Container{
		ID:            id,
		Name:          spec.Name,
		Image:         spec.Image,
		ImageID:       "sha256:" + key,
		Labels:        maps.Clone(spec.Labels),
		State:         dd.StateCreated,
		CreatedAt:     time.Now(),
		Networks:      map[string]dd.Endpoint{network: {Aliases: slices.Clone(spec.Aliases)}},
		Env:           append(env, spec.EnvList()...),
		Cmd:           slices.Clone(spec.Cmd),
		Tmpfs:         maps.Clone(spec.Tmpfs),
		MemoryBytes:   spec.MemoryBytes,
		NanoCPUs:      spec.NanoCPUs,
		PidsLimit:     spec.PidsLimit,
		SecurityOpt:   []string{dd.SecurityOptNoNewPrivileges},
		RestartPolicy: "no",
		// As the real driver makes it: no swap, every capability dropped but
		// CapAdd, a bounded json-file log.
		MemorySwapBytes: spec.MemoryBytes,
		CapDrop:         []string{dd.CapAll},
		CapAdd:          slices.Clone(spec.CapAdd),
		LogDriver:       dd.LogDriverJSONFile,
		Log:             spec.Log,
	}}
	c.script, c.scripted = ParseScript(spec.Cmd)
	for _, path := range img.Volumes {
		if _, covered := spec.Tmpfs[path]; covered {
			continue // as in Docker, a tmpfs at a VOLUME path replaces the anonymous volume
		}
		v := Volume{Name: randomID(), Container: id, Destination: path}
		f.volumes[v.Name] = v
		c.c.Mounts = append(c.c.Mounts, dd.Mount{Type: "volume", Name: v.Name, Destination: path})
	}
	f.containers[id] = c
	f.emit(c, dd.EventCreate, 0)
	return c, nil
}

// destroy removes a container and its anonymous volumes. Callers hold f.mu.
func (f *Driver) destroy(c *ctr) {
	if c.c.State == dd.StateRunning {
		code := 0
		if c.scripted {
			code = 143 // what the scripted process's SIGTERM trap exits with
		}
		f.exit(c, code, false)
	}
	c.gen++
	for _, m := range c.c.Mounts {
		delete(f.volumes, m.Name)
	}
	delete(f.containers, c.c.ID)
	f.emit(c, dd.EventDestroy, 0)
}
