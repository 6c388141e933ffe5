package fake

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

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
	p := &prepared{f: f, nameOrID: nameOrID, ref: ref, spec: spec, containerID: c.c.ID}
	f.held = append(f.held, p)
	return p, nil
}

// BreakHeldExecs makes the execs prepared in a container lose their held shell,
// as a dropped connection to the daemon does: they no longer run.
func (f *Driver) BreakHeldExecs(nameOrID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.resolve(nameOrID)
	for _, p := range f.held {
		if c != nil && p.containerID == c.c.ID {
			p.broken = true
		}
	}
}

// lost says p's held shell is gone: broken, or its container no longer runs.
// Callers hold f.mu.
func (f *Driver) lost(p *prepared) bool {
	c := f.resolve(p.containerID)
	return p.broken || c == nil || c.c.State != dd.StateRunning
}

type prepared struct {
	f                          *Driver
	nameOrID, ref, containerID string
	spec                       dd.ExecSpec
	broken                     bool // under f.mu
	mu                         sync.Mutex
	used                       bool
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
	if err := ctx.Err(); err != nil {
		return dd.ExecResult{}, dd.NewError("exec", p.ref, kindOfCtx(err), err)
	}
	p.f.mu.Lock()
	lost := p.f.lost(p)
	p.f.held = slices.DeleteFunc(p.f.held, func(q *prepared) bool { return q == p })
	p.f.mu.Unlock()
	if lost {
		return dd.ExecResult{}, dd.NewError("exec", p.ref, dd.ErrNotRun, errors.New("its held shell is gone (the connection broke or the container stopped)"))
	}
	return p.f.execute(ctx, p.nameOrID, p.ref, p.spec.WithEnv(env))
}

// Launch: see dd.PreparedExec. The command runs as ExecDetached's (never
// busy); its result is answered when it ends within wait, as Exec's, else
// handed to late as it ends (before its exec_die).
func (p *prepared) Launch(ctx context.Context, env map[string]string, wait time.Duration, late func(dd.ExecResult)) (dd.ExecResult, bool, error) {
	if !p.take() {
		return dd.ExecResult{}, false, dd.NewError("exec", p.ref, dd.ErrInvalid, errors.New("a prepared exec runs once"))
	}
	if err := dd.CheckHeldEnv(env); err != nil {
		return dd.ExecResult{}, false, dd.NewError("exec", p.ref, dd.ErrInvalid, err)
	}
	p.f.mu.Lock()
	lost := p.f.lost(p)
	p.f.held = slices.DeleteFunc(p.f.held, func(q *prepared) bool { return q == p })
	p.f.mu.Unlock()
	if lost {
		return dd.ExecResult{}, false, dd.NewError("exec", p.ref, dd.ErrNotRun, errors.New("its held shell is gone (the connection broke or the container stopped)"))
	}
	if err := p.f.enter(ctx, VerbExec, p.f.refsOf(p.nameOrID)...); err != nil {
		return dd.ExecResult{}, false, err
	}
	run, err := p.f.startExec(p.nameOrID, p.ref, p.spec.WithEnv(env), false)
	if err != nil {
		return dd.ExecResult{}, false, err
	}
	id := randomID()
	if run.runFor != Forever && run.runFor <= wait {
		time.Sleep(run.runFor)
		p.f.execDied(run, id)
		return run.res, true, nil
	}
	if run.runFor != Forever {
		time.AfterFunc(run.runFor, func() {
			if late != nil {
				late(run.res)
			}
			p.f.execDied(run, id)
		})
	}
	return dd.ExecResult{}, false, nil
}

// Held: see dd.PreparedExec.
func (p *prepared) Held() bool {
	p.mu.Lock()
	used := p.used
	p.mu.Unlock()
	p.f.mu.Lock()
	defer p.f.mu.Unlock()
	return !used && !p.f.lost(p)
}

// Close: see dd.PreparedExec.
func (p *prepared) Close() {
	if p.take() {
		p.f.mu.Lock()
		p.f.held = slices.DeleteFunc(p.f.held, func(q *prepared) bool { return q == p })
		p.f.mu.Unlock()
	}
}
