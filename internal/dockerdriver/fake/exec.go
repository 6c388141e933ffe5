package fake

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// ExecRule makes execs behave as a test needs, e.g. a probe that never
// succeeds.
type ExecRule struct {
	// Container restricts the rule to one container name or ID ("": any);
	// Command to the commands whose first word it is ("": any).
	Container, Command string
	// Result is returned instead of running the command.
	Result dd.ExecResult
	// Delay makes the command run that long first, then answer Result or,
	// when Result is zero, what it would have: a slow one, that an exec
	// bounded shorter times out (as Hang) and a longer bound lets end.
	Delay time.Duration
	// Hang makes the exec never finish, so it times out; it then keeps running
	// in its container, as a real one does, while the rule is in place.
	Hang bool
	// Times is how many execs it applies to (0: until cleared).
	Times int
}

type execRule struct {
	ExecRule
	left int
}

// OnExec adds an exec rule (the latest added wins); clear removes it.
func (f *Driver) OnExec(r ExecRule) (clear func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := &execRule{ExecRule: r, left: r.Times}
	f.execRules = append([]*execRule{e}, f.execRules...)
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.execRules = slices.DeleteFunc(f.execRules, func(x *execRule) bool { return x == e })
	}
}

func (f *Driver) matchExec(c *ctr, cmd []string) *execRule {
	for i, r := range f.execRules {
		if r.Container != "" && r.Container != c.c.Name && r.Container != c.c.ID ||
			r.Command != "" && (len(cmd) == 0 || cmd[0] != r.Command) {
			continue
		}
		if r.Times > 0 {
			r.left--
			if r.left == 0 {
				f.execRules = append(f.execRules[:i], f.execRules[i+1:]...)
			}
		}
		return r
	}
	return nil
}

// execRun is an exec the fake runs: what it returns, and for how long it runs
// first (Forever: until stopped).
type execRun struct {
	c      *ctr
	cmd    []string
	res    dd.ExecResult
	runFor time.Duration
	rule   *execRule // the Hang rule it obeys
	// killAt ends it there, whatever it does (ExecSpec.KillAtTimeout; 0: never).
	killAt time.Duration
}

// Exec runs a Script command (others exit 0 at once), or what an ExecRule says.
// As the real driver, it refuses as busy an exec into a container where an
// earlier one its caller stopped waiting for still runs.
func (f *Driver) Exec(ctx context.Context, nameOrID string, spec dd.ExecSpec) (dd.ExecResult, error) {
	return f.execute(ctx, nameOrID, dd.ExecRef(nameOrID, spec.Cmd), spec)
}

// execute runs an exec, its call counted and its faults applied.
func (f *Driver) execute(ctx context.Context, nameOrID, ref string, spec dd.ExecSpec) (dd.ExecResult, error) {
	timeout := cmp.Or(spec.Timeout, dd.DefaultExecTimeout)
	ectx, cancel := context.WithTimeout(ctx, timeout)
	err := f.enter(ectx, VerbExec, f.refsOf(nameOrID)...)
	cancel()
	switch {
	case err != nil && ctx.Err() == nil && errors.Is(ectx.Err(), context.DeadlineExceeded):
		return dd.ExecResult{}, dd.TimeoutError("exec", ref, timeout)
	case err != nil:
		return dd.ExecResult{}, err
	}
	if nameOrID == "" || len(spec.Cmd) == 0 {
		return dd.ExecResult{}, dd.NewError("exec", ref, dd.ErrInvalid, errors.New("need a container and a command"))
	}
	run, err := f.startExec(nameOrID, ref, spec, true)
	if err != nil {
		return dd.ExecResult{}, err
	}
	if spec.KillAtTimeout {
		run.killAt = timeout
	}
	res, err := f.waitExec(ctx, run, ref, timeout)
	if err != nil {
		return dd.ExecResult{}, err
	}
	f.execDied(run, randomID())
	limit := cmp.Or(spec.OutputLimit, dd.DefaultOutputLimit)
	var cut1, cut2 bool
	res.Stdout, cut1 = keepTail(res.Stdout, limit)
	res.Stderr, cut2 = keepTail(res.Stderr, limit)
	res.Truncated = res.Truncated || cut1 || cut2
	return res, nil
}

// startExec finds the container and what the exec will do in it; guard
// refuses it as busy while an abandoned exec lingers there (Exec's guard).
func (f *Driver) startExec(nameOrID, ref string, spec dd.ExecSpec, guard bool) (*execRun, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.resolve(nameOrID)
	if c == nil {
		return nil, noSuchContainer("exec", ref)
	}
	if c.c.State != dd.StateRunning {
		return nil, dd.NewError("exec", ref, dd.ErrConflict,
			fmt.Errorf("Error response from daemon: Container %s is not running", c.c.ID))
	}
	if l := f.lingeringIn(c); guard && l != nil {
		return nil, dd.BusyError(ref, nameOrID, l.cmd[0], l.why)
	}
	run := &execRun{c: c, cmd: slices.Clone(spec.Cmd)}
	rule := f.matchExec(c, spec.Cmd)
	if rule != nil {
		run.res = rule.Result
		if rule.Hang {
			run.runFor, run.rule = Forever, rule
		}
		if rule.Delay <= 0 || rule.Hang || rule.Result != (dd.ExecResult{}) {
			run.runFor = cmp.Or(run.runFor, rule.Delay)
			return run, nil
		}
	}
	if s, ok := ParseScript(spec.Cmd); ok {
		env := append(slices.Clone(c.c.Env), dd.ContainerSpec{Env: spec.Env}.EnvList()...)
		run.res.Stdout, run.res.Stderr = s.Output(env, c.files)
		run.res.ExitCode, run.runFor = s.Exit, s.Sleep
	}
	if rule != nil && run.runFor != Forever {
		run.runFor += rule.Delay
	}
	return run, nil
}

// Planned is what an exec of spec in nameOrID would answer, and how long it
// would run first (Forever: until stopped), without running it: a simulated
// container's own process (a step's command) takes that long by its
// simulator's clock. The call is counted and faults apply, as to Exec; it is
// never refused as busy.
func (f *Driver) Planned(ctx context.Context, nameOrID string, spec dd.ExecSpec) (dd.ExecResult, time.Duration, error) {
	ref := dd.ExecRef(nameOrID, spec.Cmd)
	if err := f.enter(ctx, VerbExec, f.refsOf(nameOrID)...); err != nil {
		return dd.ExecResult{}, 0, err
	}
	if nameOrID == "" || len(spec.Cmd) == 0 {
		return dd.ExecResult{}, 0, dd.NewError("exec", ref, dd.ErrInvalid, errors.New("need a container and a command"))
	}
	run, err := f.startExec(nameOrID, ref, spec, false)
	if err != nil {
		return dd.ExecResult{}, 0, err
	}
	return run.res, run.runFor, nil
}

// waitExec waits for run to end, at most timeout; one its caller stops waiting
// for keeps running in its container.
func (f *Driver) waitExec(ctx context.Context, run *execRun, ref string, timeout time.Duration) (dd.ExecResult, error) {
	if run.runFor == 0 {
		return run.res, nil
	}
	wait := run.runFor
	if run.runFor == Forever || run.runFor > timeout {
		wait = timeout
	}
	start := time.Now()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		f.mu.Lock()
		f.linger(run, start, "was abandoned ("+ctx.Err().Error()+")")
		f.mu.Unlock()
		return dd.ExecResult{}, dd.NewError("exec", ref, kindOfCtx(ctx.Err()), ctx.Err())
	case <-t.C:
	}
	if wait == run.runFor {
		return run.res, nil
	}
	f.mu.Lock()
	f.linger(run, start, "timed out after "+dd.FormatDuration(timeout))
	f.mu.Unlock()
	return dd.ExecResult{}, dd.TimeoutError("exec", ref, timeout)
}

func keepTail(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	return s[len(s)-limit:], true
}

// LogsTail returns the last lines the container's script wrote.
func (f *Driver) LogsTail(ctx context.Context, nameOrID string, n int) (string, error) {
	if err := f.enter(ctx, VerbLogsTail, f.refsOf(nameOrID)...); err != nil {
		return "", err
	}
	if nameOrID == "" {
		return "", dd.NewError("logs", nameOrID, dd.ErrInvalid, errors.New("empty container name"))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.resolve(nameOrID)
	if c == nil {
		return "", noSuchContainer("logs", nameOrID)
	}
	if n <= 0 {
		n = 20
	}
	out, _ := keepTail(strings.Join(c.logs[max(0, len(c.logs)-n):], ""), 16<<10)
	return out, nil
}
