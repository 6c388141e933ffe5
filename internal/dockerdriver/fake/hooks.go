package fake

import (
	"context"
	"errors"
	"slices"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// SeedContainer puts a container on the host without a driver call (not
// counted, no faults, no ownership label needed): an owner agent, a
// foreign container, a leftover. Its image is added if missing.
func (f *Driver) SeedContainer(spec dd.ContainerSpec, start bool) (dd.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.resolveName(spec.Name) != nil {
		return dd.Container{}, dd.NewError("seed", spec.Name, dd.ErrConflict, errors.New("name in use"))
	}
	if key, err := dd.NormalizeRef(spec.Image); err == nil {
		if _, ok := f.images[key]; !ok {
			f.images[key] = Image{}
		}
	}
	if spec.Network != "" {
		f.networks[spec.Network] = true
	}
	c, err := f.create(spec)
	if err != nil {
		return dd.Container{}, err
	}
	c.write(spec.Files)
	if start {
		f.start(c)
	}
	return c.snapshot(), nil
}

// Peek returns a container without a driver call.
func (f *Driver) Peek(nameOrID string) (dd.Container, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.resolve(nameOrID)
	if c == nil {
		return dd.Container{}, false
	}
	return c.snapshot(), true
}

// File returns a file written into a container (ContainerSpec.Files), without
// a driver call.
func (f *Driver) File(nameOrID, path string) ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.resolve(nameOrID)
	if c == nil {
		return nil, false
	}
	content, ok := c.files[path]
	return slices.Clone(content), ok
}

// WriteFile replaces a file in a container, as a command run inside it would
// (a test's engine simulation rotating a password), without a driver call.
func (f *Driver) WriteFile(nameOrID, path string, content []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.resolve(nameOrID)
	if c == nil {
		return dd.NewError("write", nameOrID, dd.ErrNotFound, nil)
	}
	c.write([]dd.File{{Path: path, Content: content}})
	return nil
}

// ExitContainer makes a running container exit with code after a delay
// (0: now), emitting a die event.
func (f *Driver) ExitContainer(nameOrID string, code int, after time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.resolve(nameOrID)
	if c == nil {
		return noSuchContainer("exit", nameOrID)
	}
	if after <= 0 {
		f.exit(c, code, false)
	} else {
		f.exitLater(c, code, after)
	}
	return nil
}

// AppendLogs adds lines to a container's log, as its process would print them.
func (f *Driver) AppendLogs(nameOrID string, lines ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.resolve(nameOrID)
	if c == nil {
		return noSuchContainer("logs", nameOrID)
	}
	for _, l := range lines {
		c.logs = append(c.logs, l+"\n")
	}
	return nil
}

// OOMKill makes a running container die of OOM now (exit 137, oom and die events).
func (f *Driver) OOMKill(nameOrID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.resolve(nameOrID)
	if c == nil {
		return noSuchContainer("oom", nameOrID)
	}
	f.exit(c, 137, true)
	return nil
}

// DeleteContainer removes a container behind the driver's back, as
// someone's `docker rm -fv` would (events included).
func (f *Driver) DeleteContainer(nameOrID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.resolve(nameOrID)
	if c == nil {
		return noSuchContainer("delete", nameOrID)
	}
	f.destroy(c)
	return nil
}

// Call is one call of verb on nameOrID as every method makes it (counted,
// its faults applied) that does nothing else: for a simulator layered on the
// fake that answers some calls itself.
func (f *Driver) Call(ctx context.Context, verb Verb, nameOrID string) error {
	return f.enter(ctx, verb, f.refsOf(nameOrID)...)
}

// ExecDied emits the end of an exec in container nameOrID with exitCode, if
// it still runs: for a simulator whose execs end when it says.
func (f *Driver) ExecDied(nameOrID string, exitCode int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.resolve(nameOrID)
	if c == nil || c.c.State != dd.StateRunning {
		return
	}
	e := newEvent(c, dd.EventExecDie, exitCode)
	e.ExecID = randomID()
	f.deliver(e)
}
