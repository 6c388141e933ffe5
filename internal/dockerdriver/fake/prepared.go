package fake

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// PrepareExec checks at once what the real driver's exec start would (the
// container runs, no exec left running in it); the command runs, as Exec's, at
// Run, with the environment merged.
func (f *Driver) PrepareExec(ctx context.Context, nameOrID string, spec dd.ExecSpec) (dd.PreparedExec, error) {
	ref := dd.ExecRef(nameOrID, spec.Cmd)
	if err := f.enter(ctx, VerbPrepareExec, f.refsOf(nameOrID)...); err != nil {
		return nil, err
	}
	if nameOrID == "" || len(spec.Cmd) == 0 {
		return nil, dd.NewError("exec", ref, dd.ErrInvalid, errors.New("need a container and a command"))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.resolve(nameOrID)
	switch {
	case c == nil:
		return nil, noSuchContainer("exec", ref)
	case c.c.State != dd.StateRunning:
		return nil, dd.NewError("exec", ref, dd.ErrConflict,
			fmt.Errorf("Error response from daemon: Container %s is not running", c.c.ID))
	case f.lingeringIn(c) != nil:
		l := f.lingeringIn(c)
		return nil, dd.BusyError(ref, nameOrID, l.cmd[0], l.why)
	}
	return &prepared{f: f, nameOrID: nameOrID, ref: ref, spec: spec}, nil
}

type prepared struct {
	f             *Driver
	nameOrID, ref string
	spec          dd.ExecSpec
	mu            sync.Mutex
	used          bool
}

func (p *prepared) take() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	used := p.used
	p.used = true
	return !used
}

// Run: see dd.PreparedExec.
func (p *prepared) Run(ctx context.Context, env map[string]string) (dd.ExecResult, error) {
	if !p.take() {
		return dd.ExecResult{}, dd.NewError("exec", p.ref, dd.ErrInvalid, errors.New("a prepared exec runs once"))
	}
	if err := dd.CheckHeldEnv(env); err != nil {
		return dd.ExecResult{}, dd.NewError("exec", p.ref, dd.ErrInvalid, err)
	}
	spec := p.spec
	spec.Env = maps.Clone(spec.Env)
	if spec.Env == nil {
		spec.Env = map[string]string{}
	}
	maps.Copy(spec.Env, env)
	return p.f.execute(ctx, p.nameOrID, p.ref, spec)
}

// Close: see dd.PreparedExec.
func (p *prepared) Close() { p.take() }
