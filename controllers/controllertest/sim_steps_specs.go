package controllertest

import (
	"context"
	"slices"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/host/step"
)

// What specs ask of the simulated steps: make them slow, end them, count
// and list them.

// SlowStep makes the steps whose ID is ID (in Container, "": any) run for For
// (fake.Forever: until cancelled or their container goes) before they end.
type SlowStep struct {
	Container, ID string
	For           time.Duration
}

// SlowSteps makes steps slow; clear undoes it (steps already started keep
// their time).
func (s *EngineSim) SlowSteps(r SlowStep) (clear func()) {
	s.stepsState.mu.Lock()
	defer s.stepsState.mu.Unlock()
	p := &r
	s.stepsState.slow = append([]*SlowStep{p}, s.stepsState.slow...)
	return func() {
		s.stepsState.mu.Lock()
		defer s.stepsState.mu.Unlock()
		s.stepsState.slow = slices.DeleteFunc(s.stepsState.slow, func(x *SlowStep) bool { return x == p })
	}
}

// StepsStarted is how many steps of ID were started (each key once).
func (s *EngineSim) StepsStarted(id string) int {
	s.stepsState.mu.Lock()
	defer s.stepsState.mu.Unlock()
	return s.stepsState.starts[id]
}

// RunningSteps lists the keys of the steps running in container (a name or ID).
func (s *EngineSim) RunningSteps(container string) []string {
	c, ok := s.Peek(container)
	if !ok {
		return nil
	}
	s.stepsState.mu.Lock()
	defer s.stepsState.mu.Unlock()
	var out []string
	for k, st := range s.stepsState.steps[c.ID] {
		if st.Ended.IsZero() && !st.due(time.Now()) {
			out = append(out, string(k))
		}
	}
	return out
}

// EndSteps ends the steps running in container (a name or ID) now, with the
// result their command gave, as if their time were up.
func (s *EngineSim) EndSteps(container string) {
	c, ok := s.Peek(container)
	if !ok {
		return
	}
	s.stepsState.mu.Lock()
	var ending []*simStep
	for _, st := range s.stepsState.steps[c.ID] {
		if st.Ended.IsZero() && !st.due(time.Now()) {
			ending = append(ending, st)
		}
	}
	s.stepsState.mu.Unlock()
	for _, st := range ending {
		res, _ := s.runStepCommand(context.Background(), c.ID, st)
		s.stepsState.mu.Lock()
		now := time.Now()
		st.res, st.runs, st.bound = res, max(now.Sub(st.Started), time.Nanosecond), 0
		st.settle(now)
		s.stepsState.mu.Unlock()
		s.ExecDied(c.ID, step.RunnerExit)
	}
}

// runStepCommand runs st's command as the simulator's Exec would (exec rules
// apply; a checked one's own command, engine.Step.Checked), without waiting:
// the result it ends with, and how long it runs first.
func (s *EngineSim) runStepCommand(ctx context.Context, id string, st *simStep) (dd.ExecResult, time.Duration) {
	spec := dd.ExecSpec{Cmd: st.argv, Env: st.env}
	cmd, expect, isChecked := engine.Unchecked(spec.Cmd)
	if isChecked {
		spec.Cmd = cmd
	}
	s.noteStep(id, spec)
	res, runFor, err := s.Planned(ctx, id, spec)
	if err != nil {
		return dd.ExecResult{ExitCode: 1, Stderr: err.Error()}, 0
	}
	if res = s.engineAnswer(id, spec, res); isChecked {
		res = checked(res, expect)
	}
	return res, runFor
}
