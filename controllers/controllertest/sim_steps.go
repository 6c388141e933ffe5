package controllertest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	"github.com/roboco-sandbox/sandbox-controller/internal/host/step"
)

// The simulator runs the host's detached steps (internal/host/step) as a
// container would: it decodes the runner's commands, keeps each step's state
// per container, and answers the state commands in the runner's own format.
// A step runs its command through the simulator's Exec (exec rules apply to
// it), taking as long as a SlowStep says (0 by default) before it ends.

// simSteps are the steps of every container, by container ID and key.
type simSteps struct {
	mu    sync.Mutex
	slow  []*SlowStep
	steps map[string]map[step.Key]*simStep
	// starts counts the steps started, by ID.
	starts map[string]int
}

type simStep struct {
	step.Simulated
	id    string
	argv  []string
	env   map[string]string
	files int // a seed's scripts, for its progress
	// runs is how long it takes (fake.Forever: until ended), bound when it
	// is killed (0: never).
	runs, bound time.Duration
	res         dd.ExecResult
}

// end is how long after its start st ends by itself (0: never).
func (st *simStep) end() time.Duration {
	switch {
	case st.bound > 0 && (st.runs == fake.Forever || st.runs > st.bound):
		return st.bound
	case st.runs == fake.Forever:
		return 0
	}
	return max(st.runs, time.Nanosecond)
}

// launchStep is a step's runner launched (a prepared exec): a key taken
// answers so at once; a step that supersedes cancels the others of its ID
// running there and drops those ended; one that ends within wait is answered
// by its runner, ended, as the container's prints it.
func (s *EngineSim) launchStep(ctx context.Context, id string, req step.Request, env map[string]string, wait time.Duration) (dd.ExecResult, bool, error) {
	c, err := s.stepCall(ctx, fake.VerbExec, id)
	if err != nil {
		return dd.ExecResult{}, false, err
	}
	if s.stepsState.has(c.ID, req.Key) {
		return dd.ExecResult{ExitCode: step.Taken}, true, nil
	}
	if req.Supersedes {
		s.supersede(c.ID, req.Key)
	}
	st := s.startStep(ctx, c, req, env)
	if st.runs == fake.Forever || st.runs > wait {
		return dd.ExecResult{}, false, nil
	}
	time.Sleep(st.runs)
	s.stepsState.mu.Lock()
	defer s.stepsState.mu.Unlock()
	now := time.Now()
	st.settle(now)
	return dd.ExecResult{ExitCode: step.RunnerExit, Stdout: step.Print(&st.Simulated, now)}, true, nil
}

// supersede cancels the steps of key's ID running in container and drops
// those ended, as a runner with STEP_SUPERSEDE does.
func (s *EngineSim) supersede(container string, key step.Key) {
	st := &s.stepsState
	st.mu.Lock()
	defer st.mu.Unlock()
	now := time.Now()
	for k, o := range st.steps[container] {
		if k == key || o.id != idOf(key) {
			continue
		}
		if o.settle(now); !o.Ended.IsZero() {
			delete(st.steps[container], k)
			continue
		}
		o.Ended, o.ExitCode, o.Cancelled, o.Out = now, 137, true, "Killed"
		time.AfterFunc(0, func() { s.ExecDied(container, step.RunnerExit) })
	}
}

func idOf(k step.Key) string { return string(k[:strings.LastIndex(string(k), "-")]) }

// stepCall makes a step command's Docker call (faults apply, exec rules do
// not: they are for the step's own command) and finds its running container.
func (s *EngineSim) stepCall(ctx context.Context, verb fake.Verb, id string) (dd.Container, error) {
	if err := s.Call(ctx, verb, id); err != nil {
		return dd.Container{}, err
	}
	c, ok := s.Peek(id)
	if !ok {
		return dd.Container{}, dd.NewError("exec", id, dd.ErrNotFound, errors.New("no such container: "+id))
	}
	if c.State != dd.StateRunning {
		return dd.Container{}, dd.NewError("exec", id, dd.ErrConflict, fmt.Errorf("container %s is not running", c.ID))
	}
	return c, nil
}

func (st *simSteps) has(container string, k step.Key) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	_, ok := st.steps[container][k]
	return ok
}

// startStep runs req's command now (its result is what it answers when its
// time is up) and records the step.
func (s *EngineSim) startStep(ctx context.Context, c dd.Container, req step.Request, env map[string]string) *simStep {
	argv, timeout := fake.KilledAt(req.Argv)
	id := idOf(req.Key)
	runs := s.stepsState.slowFor(c, id)
	st := &simStep{Simulated: step.Simulated{Started: time.Now()}, id: id, argv: argv, env: env, runs: runs, bound: timeout, files: seedFiles(argv)}
	if runs != fake.Forever {
		// Note: a step that never ends by itself (cancelled, killed at its
		// bound) never does its work; EndSteps runs it when it ends one.
		// Its command may take longer than the SlowStep says (an exec rule's).
		var runFor time.Duration
		st.res, runFor = s.runStepCommand(ctx, c.ID, st)
		if runFor == fake.Forever || runFor > st.runs {
			st.runs = runFor
		}
	}
	s.stepsState.mu.Lock()
	if s.stepsState.steps == nil {
		s.stepsState.steps, s.stepsState.starts = map[string]map[step.Key]*simStep{}, map[string]int{}
	}
	if s.stepsState.steps[c.ID] == nil {
		s.stepsState.steps[c.ID] = map[step.Key]*simStep{}
	}
	s.stepsState.steps[c.ID][req.Key] = st
	s.stepsState.starts[id]++
	s.stepsState.mu.Unlock()
	if end := st.end(); end > 0 {
		time.AfterFunc(end, func() { s.ExecDied(c.ID, step.RunnerExit) })
	}
	return st
}

func (st *simSteps) slowFor(c dd.Container, id string) time.Duration {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, r := range st.slow {
		if (r.Container == "" || r.Container == c.Name || r.Container == c.ID) && r.ID == id {
			return r.For
		}
	}
	return 0
}

// seedFiles counts a seed's scripts (sh -c <script> init FILE...).
func seedFiles(argv []string) int {
	if len(argv) > 3 && argv[0] == "sh" && argv[3] == "init" {
		return len(argv) - 4
	}
	return 0
}

// due says st's time is up at now.
func (st *simStep) due(now time.Time) bool {
	end := st.end()
	return end > 0 && !now.Before(st.Started.Add(end))
}

// settle ends st once its time is up (killed, 137, at its bound); a running
// seed says which script runs.
func (st *simStep) settle(now time.Time) {
	if !st.Ended.IsZero() {
		return
	}
	if st.due(now) {
		st.Ended, st.ExitCode = st.Started.Add(st.end()), st.res.ExitCode
		st.Out = st.res.Stdout + st.res.Stderr
		if st.end() == st.bound && st.runs != st.bound {
			st.ExitCode, st.Out = 137, "Killed"
		}
		return
	}
	if span := cmp.Or(st.end(), time.Hour); st.files > 0 {
		per := span / time.Duration(st.files)
		i := min(int(now.Sub(st.Started)/max(per, time.Nanosecond)), st.files-1)
		st.Progress = fmt.Sprintf("%d of %d scripts, %s\n", i+1, st.files, st.argv[4+i])
		st.Progressed = st.Started.Add(time.Duration(i) * per)
	}
}

// answerStep answers a state command of the step runner, as the container's
// shell would print it.
func (s *EngineSim) answerStep(ctx context.Context, id string, req step.Request) (dd.ExecResult, error) {
	c, err := s.stepCall(ctx, fake.VerbExec, id)
	if err != nil {
		return dd.ExecResult{}, err
	}
	st := s.stepsState.get(c.ID, req.Key)
	if end := st.endOrZero(); end > 0 && req.Wait > 0 {
		// The inline wait: a step that ends within it is answered ended.
		if left := time.Until(st.Started.Add(end)); left > 0 && left <= req.Wait {
			time.Sleep(left)
		}
	}
	s.stepsState.mu.Lock()
	defer s.stepsState.mu.Unlock()
	now := time.Now()
	if st == nil {
		return dd.ExecResult{Stdout: step.Print(nil, now)}, nil
	}
	st.settle(now)
	switch req.Verb {
	case step.VerbCancel:
		if st.Ended.IsZero() {
			st.Ended, st.ExitCode, st.Cancelled, st.Out = now, 137, true, "Killed"
			time.AfterFunc(0, func() { s.ExecDied(c.ID, step.RunnerExit) })
		}
	case step.VerbForget:
		if !st.Ended.IsZero() {
			delete(s.stepsState.steps[c.ID], req.Key)
			return dd.ExecResult{Stdout: step.Print(nil, now)}, nil
		}
	}
	return dd.ExecResult{Stdout: step.Print(&st.Simulated, now)}, nil
}

func (st *simStep) endOrZero() time.Duration {
	if st == nil {
		return 0
	}
	return st.end()
}

func (st *simSteps) get(container string, k step.Key) *simStep {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.steps[container][k]
}
