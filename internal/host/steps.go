package host

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/chaosplant"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/host/step"
)

// InlineStepWait is how long starting a step waits for its end before the
// pass goes on: a fast step answers at once, a slow one is observed later.
const InlineStepWait = 300 * time.Millisecond

// Poll is when a pass should look at a step that has run for elapsed again,
// as a backstop: its end wakes its object at once through Docker's exec_die
// event. Short at first (fast steps end soon), longer as it runs, capped so
// that progress in the status stays fresh.
func Poll(elapsed time.Duration) time.Duration {
	return min(max(elapsed/4, time.Second), 15*time.Second)
}

// StepEnded says ev is the end of a step's runner (a detached step ended, or
// was cancelled): its object should look at it. Any other exec_die is not.
func StepEnded(ev dd.Event) bool {
	return ev.Type == dd.EventExecDie && ev.ExitCode == step.RunnerExit
}

// started remembers the steps this manager started, per container, and
// when, so that a later pass observes one (one exec) instead of starting it
// again (two), and the seeds it found absent (waiting for a lane), so that a
// later pass need not look again. A manager that forgot (restarted) starts a
// step again: the container refuses a key it has run, and answers its state.
// Entries go with their container.
type started struct {
	mu sync.Mutex
	// keys: when each was started; the zero time for one found absent.
	keys map[string]map[step.Key]time.Time
	// slowProbes: the containers whose probe outran its inline bound.
	slowProbes map[string]bool
}

// at is when this manager started step k in container id, if it did.
func (s *started) at(id string, k step.Key) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.keys[id][k]
	return t, !t.IsZero()
}

func (s *started) has(id string, k step.Key) bool {
	_, ok := s.at(id, k)
	return ok
}

// known says the step was started, or found absent, by this manager.
func (s *started) known(id string, k step.Key) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.keys[id][k]
	return ok
}

// any says this manager started a step on container id, or found one absent.
func (s *started) any(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.keys[id]) > 0
}

func (s *started) add(id string, k step.Key, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		s.keys = map[string]map[step.Key]time.Time{}
	}
	if s.keys[id] == nil {
		s.keys[id] = map[step.Key]time.Time{}
	}
	s.keys[id][k] = at
}

func (s *started) absent(id string, k step.Key) { s.add(id, k, time.Time{}) }

// drop forgets step k in container id: its end is recorded, or its state
// is gone from the container.
func (s *started) drop(id string, k step.Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.keys[id], k)
}

func (s *started) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.keys, id)
	delete(s.slowProbes, id)
}

// probesSlow marks container id's probes as ones that run beside the pass.
func (s *started) probesSlow(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.slowProbes == nil {
		s.slowProbes = map[string]bool{}
	}
	s.slowProbes[id] = true
}

func (s *started) slowProbe(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.slowProbes[id]
}

// engineStep is engine step es as the step id, killed at es.Timeout (0: no
// bound of its own).
func engineStep(id string, es engine.Step) step.Step {
	s := step.Step{ID: id, Argv: es.Argv, Env: es.Env}
	if es.Timeout > 0 {
		secs := strconv.Itoa(max(1, int(es.Timeout.Seconds())))
		s.Argv = append([]string{"timeout", "-s", "KILL", secs}, es.Argv...)
	}
	return s
}

// runStep starts s in container id, or observes it once started: a pass
// calls it on every pass until the state it answers has ended. It reads the
// step's state once: a call that read it again would be waiting on it
// (StepsAwaited).
func (h *Host) runStep(ctx context.Context, id string, s step.Step) (step.State, error) {
	key := s.Key()
	var st step.State
	var err error
	if h.started.has(id, key) {
		st, err = h.steps.Observe(ctx, id, key)
	} else {
		at := time.Now()
		if st, err = h.steps.Start(ctx, id, s); err == nil {
			h.started.add(id, key, at)
		}
	}
	for err == nil && !st.Ended() && chaosplant.Active(chaosplant.StepAwaited) {
		stepsAwaited.Add(1)
		time.Sleep(200 * time.Millisecond)
		st, err = h.steps.Observe(ctx, id, key)
	}
	return st, err
}

// retryStep lets an ended step of c run again at its next call: the
// container forgets it, and so does this manager.
func (h *Host) retryStep(ctx context.Context, c dd.Container, key step.Key) {
	if _, err := h.steps.Forget(ctx, c.ID, key); err == nil {
		h.started.drop(c.ID, key)
	}
}

// StepsUnderway says this manager started a step (a seed) on container id,
// or found one waiting for its lane: the container answered before it.
func (h *Host) StepsUnderway(id string) bool { return h.started.any(id) }

// stepsAwaited counts the reads of a step's state beyond the first in one
// call: a pass that waited on a container step.
var stepsAwaited atomic.Uint64

// StepsAwaited is how many times a pass read a container step's state again
// in one call, waiting on it: 0 unless a bug holds a worker on a step (the
// planted chaosplant.StepAwaited).
func StepsAwaited() uint64 { return stepsAwaited.Load() }
