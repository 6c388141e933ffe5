package lease

import (
	"context"
	"errors"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// errNotHolder refuses a Docker call that changes a host this replica does not
// hold the Lease of (any more).
var errNotHolder = errors.New("this manager no longer holds the Lease of the Docker host")

// Fenced is a host's driver as its controllers use it when replicas share hosts:
// every call that changes the host (create, remove, rename, exec, pull, plant)
// first checks, by this replica's own clock, that it still holds the host's
// Lease. A Lease alone is no fence: a replica frozen past it (a long GC pause,
// SIGSTOP) resumes in the middle of a pass, and this check is what stops that
// pass from acting where another replica now does. Reads go through.
type Fenced struct {
	dd.Driver
	Holds func() bool
}

func (f Fenced) check(op, ref string) error {
	if f.Holds() {
		return nil
	}
	return dd.NewError(op, ref, dd.ErrUnavailable, errNotHolder)
}

func (f Fenced) PlantHostIdentity(ctx context.Context, id string) error {
	if err := f.check("plant host identity", ""); err != nil {
		return err
	}
	return f.Driver.PlantHostIdentity(ctx, id)
}

func (f Fenced) PullImage(ctx context.Context, ref string, progress func(dd.PullProgress)) error {
	if err := f.check("pull", ref); err != nil {
		return err
	}
	return f.Driver.PullImage(ctx, ref, progress)
}

func (f Fenced) CreateContainer(ctx context.Context, spec dd.ContainerSpec) (dd.Container, error) {
	if err := f.check("create", spec.Name); err != nil {
		return dd.Container{}, err
	}
	return f.Driver.CreateContainer(ctx, spec)
}

func (f Fenced) Exec(ctx context.Context, nameOrID string, spec dd.ExecSpec) (dd.ExecResult, error) {
	if err := f.check("exec", nameOrID); err != nil {
		return dd.ExecResult{}, err
	}
	return f.Driver.Exec(ctx, nameOrID, spec)
}

func (f Fenced) PrepareExec(ctx context.Context, nameOrID string, spec dd.ExecSpec) (dd.PreparedExec, error) {
	if err := f.check("exec", nameOrID); err != nil {
		return nil, err
	}
	p, err := f.Driver.PrepareExec(ctx, nameOrID, spec)
	if err != nil {
		return nil, err
	}
	return fencedExec{PreparedExec: p, f: f, ref: nameOrID}, nil
}

func (f Fenced) ExecDetached(ctx context.Context, nameOrID string, spec dd.ExecSpec) (string, error) {
	if err := f.check("exec", nameOrID); err != nil {
		return "", err
	}
	return f.Driver.ExecDetached(ctx, nameOrID, spec)
}

func (f Fenced) Remove(ctx context.Context, nameOrID string, stopTimeout time.Duration) error {
	if err := f.check("remove", nameOrID); err != nil {
		return err
	}
	return f.Driver.Remove(ctx, nameOrID, stopTimeout)
}

func (f Fenced) Rename(ctx context.Context, nameOrID, newName string) error {
	if err := f.check("rename", nameOrID); err != nil {
		return err
	}
	return f.Driver.Rename(ctx, nameOrID, newName)
}

// fencedExec is a prepared exec (a claim's rotation, a data step held ahead) that runs only
// while the Lease is held.
type fencedExec struct {
	dd.PreparedExec
	f   Fenced
	ref string
}

func (e fencedExec) Launch(ctx context.Context, env map[string]string, wait time.Duration, late func(dd.ExecResult)) (dd.ExecResult, bool, error) {
	if err := e.f.check("exec", e.ref); err != nil {
		return dd.ExecResult{}, false, err
	}
	return e.PreparedExec.Launch(ctx, env, wait, late)
}

func (e fencedExec) Run(ctx context.Context, env map[string]string) (dd.ExecResult, error) {
	if err := e.f.check("exec", e.ref); err != nil {
		return dd.ExecResult{}, err
	}
	return e.PreparedExec.Run(ctx, env)
}
