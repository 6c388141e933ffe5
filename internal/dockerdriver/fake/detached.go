package fake

import (
	"context"
	"errors"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// ExecDetached starts an exec as Exec does (a Script, an ExecRule, or a
// command that exits 0 at once) and returns its ID without waiting; it is
// never refused as busy (the real driver's guard covers Exec only). Its end
// is an EventExecDie with its exit code, unless it runs forever (a Hang rule,
// a Script that sleeps Forever) or its container stops first: the fake keeps
// no process to kill, so that exec simply never ends.
func (f *Driver) ExecDetached(ctx context.Context, nameOrID string, spec dd.ExecSpec) (string, error) {
	ref := dd.ExecRef(nameOrID, spec.Cmd)
	if err := f.enter(ctx, VerbExecDetached, f.refsOf(nameOrID)...); err != nil {
		return "", err
	}
	if nameOrID == "" || len(spec.Cmd) == 0 {
		return "", dd.NewError("exec", ref, dd.ErrInvalid, errors.New("need a container and a command"))
	}
	run, err := f.startExec(nameOrID, ref, spec, false)
	if err != nil {
		return "", err
	}
	id := randomID()
	switch run.runFor {
	case Forever:
	case 0:
		f.execDied(run, id)
	default:
		time.AfterFunc(run.runFor, func() { f.execDied(run, id) })
	}
	return id, nil
}

// execDied emits run's exec_die, when its container still runs.
func (f *Driver) execDied(run *execRun, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.containers[run.c.c.ID] != run.c || run.c.c.State != dd.StateRunning {
		return
	}
	e := newEvent(run.c, dd.EventExecDie, run.res.ExitCode)
	e.ExecID = id
	f.deliver(e)
}
