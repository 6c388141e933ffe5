package sweep

import (
	"fmt"
	"sync"
	"time"
)

// streamState knows whether the sweep's Docker event stream may have missed
// events: before it is subscribed, and from an EventLost until the EventResync
// after it.
type streamState struct {
	mu       sync.Mutex
	started  bool
	lostAt   time.Time
	isBehind bool
}

func (s *streamState) subscribed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started = true
}

func (s *streamState) lost() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.isBehind {
		s.isBehind, s.lostAt = true, time.Now()
	}
}

func (s *streamState) resynced() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.isBehind = false
}

// behind says why the stream cannot be trusted, or "".
func (s *streamState) behind() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !s.started:
		return "the Docker event stream is not subscribed yet"
	case s.isBehind:
		return fmt.Sprintf("the Docker event stream has been broken since %s; waiting for its resync", s.lostAt.Format(time.RFC3339))
	}
	return ""
}
