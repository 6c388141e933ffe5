package controllertest

import (
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

type featureStep struct {
	name string
	at   time.Time
}

// CreatesBetween counts the creates that began in [from, to).
func (s *EngineSim) CreatesBetween(from, to time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, at := range s.creates {
		if !at.Before(from) && at.Before(to) {
			n++
		}
	}
	return n
}

// StepStarted is when the first feature step name (rotate, data) began in
// container id, before any fault delayed it; ok is false when none did.
func (s *EngineSim) StepStarted(id, name string) (at time.Time, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.steps[id] {
		if st.name == name {
			return st.at, true
		}
	}
	return time.Time{}, false
}

// noteStep records a feature step's start.
func (s *EngineSim) noteStep(id string, spec dd.ExecSpec) {
	if len(spec.Cmd) > 3 && spec.Cmd[0] == "sh" {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.steps[id] = append(s.steps[id], featureStep{spec.Cmd[3], time.Now()})
	}
}

// track counts one call of kind in flight until the returned func is called.
func (s *EngineSim) track(kind string) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inflight[kind]++
	s.peak[kind] = max(s.peak[kind], s.inflight[kind])
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.inflight[kind]--
	}
}

// PeakConcurrency is the most calls of kind ever in flight at once.
func (s *EngineSim) PeakConcurrency(kind string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak[kind]
}
