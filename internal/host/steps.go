package host

import (
	"context"
	"strconv"
	"sync"
	"time"

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
// again (two). A manager that forgot (restarted) starts it again: the
// container refuses a key it has run, and answers its state. Entries go with
// their container.
type started struct {
	mu   sync.Mutex
	keys map[string]map[step.Key]time.Time
}

// at is when this manager started step k in container id, if it did.
func (s *started) at(id string, k step.Key) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.keys[id][k]
	return t, ok
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
// calls it on every pass until the state it answers has ended.
func (h *Host) runStep(ctx context.Context, id string, s step.Step) (step.State, error) {
	key := s.Key()
	if _, ok := h.started.at(id, key); ok {
		return h.steps.Observe(ctx, id, key)
	}
	at := time.Now()
	st, err := h.steps.Start(ctx, id, s)
	if err == nil {
		h.started.add(id, key, at)
	}
	return st, err
}
