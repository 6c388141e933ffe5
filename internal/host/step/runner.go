package step

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// Runner starts, observes and cancels steps in the containers of one Docker
// host. Every answer comes from the container; it keeps only the launchers
// held ahead (Hold).
type Runner struct {
	driver dd.Driver
	wait   time.Duration
	held   launchers
	late   lateStates
}

// New is the runner for driver's host. inlineWait is how long Start and
// Cancel wait for the step's end before they answer (a few hundred ms: a
// fast step is Done at once, a slow one Running), 0 for not at all.
func New(driver dd.Driver, inlineWait time.Duration) *Runner {
	return &Runner{driver: driver, wait: max(0, inlineWait)}
}

// execSlack bounds a state exec beyond its waits: a few small reads.
const execSlack = 10 * time.Second

// appear is how long the read after a launch that did not end waits for its
// runner to claim the step's directory.
const appear = 10 * time.Second

// Start runs s in container (a name or, better, an ID: see dd.Driver.Exec)
// unless a step of its key was started there before, and answers its state
// after the inline wait. A step of that key running or ended is never
// started again, whoever started it: Start is safe to call on every pass,
// and after a manager restart.
//
// The step's runner is a prepared exec launched (dd.PreparedExec.Launch):
// its environment reaches it on stdin, never in an exec's inspectable one;
// one held ahead (Hold) costs no exec start; and a step that ends within the
// inline wait is answered by its runner itself, with no state exec (a slower
// one by a state exec after the wait).
func (r *Runner) Start(ctx context.Context, container string, s Step) (State, error) {
	if err := s.valid(); err != nil {
		return State{}, err
	}
	key := s.Key()
	env := maps.Clone(s.Env)
	if env == nil {
		env = map[string]string{}
	}
	env["STEP_DIR"] = dir(key)
	if s.Output {
		env["STEP_OUT"] = "1"
	}
	if s.Supersedes {
		env["STEP_SUPERSEDE"] = "1"
		r.late.supersede(container, key)
	}
	res, ended, err := r.launch(ctx, container, s, env)
	switch {
	case err != nil:
		return State{}, fmt.Errorf("starting step %s: %w", s.ID, err)
	case !ended:
		// Slow: it runs on, its state read by the next Observe (or its end,
		// printed as it ended): a read now would take the CPU it runs on.
		r.late.launched(container, key)
		return State{Key: key, Phase: Running}, nil
	case res.ExitCode == runnerTaken:
		st, err := r.state(ctx, container, key, observeScript, r.wait, 0)
		st.Earlier = true
		return st, err
	case res.ExitCode != RunnerExit:
		return State{}, fmt.Errorf("starting step %s: its runner exited %d: %s", s.ID, res.ExitCode, clean(res.Stderr, maxMessage))
	}
	st, err := parse(res.Stdout)
	if err != nil {
		return State{}, fmt.Errorf("starting step %s: %w", s.ID, err)
	}
	st.Key = key
	return st, nil
}

// launch launches s's runner with env: in the launcher held for it, else
// (none, or its held shell is gone) in a new one.
func (r *Runner) launch(ctx context.Context, container string, s Step, env map[string]string) (dd.ExecResult, bool, error) {
	cmd := launchCmd(s)
	late := r.late.record(container, s.Key())
	if p := r.held.take(container, cmd); p != nil {
		res, ended, err := p.Launch(ctx, env, r.wait, late)
		if !errors.Is(err, dd.ErrNotRun) {
			return res, ended, err
		}
	}
	p, err := r.driver.PrepareExec(ctx, container, dd.ExecSpec{Cmd: cmd, OutputLimit: 8 << 10, HoldsItself: true})
	if err != nil {
		return dd.ExecResult{}, false, err
	}
	return p.Launch(ctx, env, r.wait, late)
}

// launcher is every step's command before the step's own.
var launcher = []string{"sh", "-c", reaper, "step", runner, perlRunner}

// launchCmd is the runner of s's command, its environment to come.
func launchCmd(s Step) []string {
	return append(slices.Clip(launcher), s.Argv...)
}

// Observe answers the state of the step key in container: the one its runner
// printed as it ended, when this Runner launched it and saw that end (no
// exec), else from one short exec.
func (r *Runner) Observe(ctx context.Context, container string, key Key) (State, error) {
	st, ok, unread := r.late.take(container, key)
	if ok {
		return st, nil
	}
	if !unread {
		return r.state(ctx, container, key, observeScript, 0, 0)
	}
	// Note: its first read waits for its runner to claim the step's
	// directory (a busy host may hold a launched exec back).
	st, err := r.state(ctx, container, key, observeScript, 0, appear)
	if err == nil && st.Phase == Absent {
		return st, fmt.Errorf("observing step %s: its runner made no state in %s", key, appear)
	}
	if err != nil {
		r.late.launched(container, key) // read again next time
	}
	return st, err
}

// Cancel stops the step key in container, unless it has ended: it kills the
// step's process group (never the runner, which records the end) and answers
// its state after the inline wait (Cancelled, or Running while it dies).
func (r *Runner) Cancel(ctx context.Context, container string, key Key) (State, error) {
	_, _, unread := r.late.take(container, key)
	return r.state(ctx, container, key, cancelScript, r.wait, appearIf(unread))
}

// Forget removes an ended step's state, so that its key may run again (a
// retry); a step still running is left as it is. It answers the state after:
// Absent, or Running.
func (r *Runner) Forget(ctx context.Context, container string, key Key) (State, error) {
	_, _, unread := r.late.take(container, key)
	return r.state(ctx, container, key, forgetScript, 0, appearIf(unread))
}

// state runs script against key's directory and reads the state it prints;
// the script waits up to appear for the directory, then up to wait for the end.
func (r *Runner) state(ctx context.Context, container string, key Key, script string, wait, appear time.Duration) (State, error) {
	if err := key.valid(); err != nil {
		return State{}, err
	}
	// Note: killed at its timeout, as a probe is: one left running (a host
	// at a load of 60 ran a 10 s state read for minutes) kept its container
	// busy, refusing every later read and start of a step there.
	spec := dd.ExecSpec{
		Cmd:           []string{"sh", "-c", script, "step", dir(key), ticks(wait), ticks(appear)},
		Timeout:       wait + appear + execSlack,
		OutputLimit:   8 << 10,
		KillAtTimeout: true,
	}
	out, err := r.driver.Exec(ctx, container, spec)
	if err != nil {
		return State{}, fmt.Errorf("reading step %s: %w", key, err)
	}
	if out.ExitCode != 0 {
		return State{}, fmt.Errorf("reading step %s: exit code %d: %s", key, out.ExitCode, clean(out.Stderr, maxMessage))
	}
	st, err := parse(out.Stdout)
	if err != nil {
		return State{}, fmt.Errorf("reading step %s: %w", key, err)
	}
	st.Key = key
	return st, nil
}

func dir(key Key) string { return Base + "/" + string(key) }

func ticks(d time.Duration) string { return strconv.Itoa(int(d / (50 * time.Millisecond))) }

// appearIf is how long a state script waits for a step's directory: appear
// for a step launched here whose state was not read yet, else not at all.
func appearIf(unread bool) time.Duration {
	if unread {
		return appear
	}
	return 0
}
