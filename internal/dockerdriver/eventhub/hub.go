// Package eventhub fans one Docker host's container event stream out to its
// consumers (the Sandbox reconciler, the orphan sweep, the owner index), so
// that the host serves one stream however many consumers there are, and a
// slow consumer never stalls the others.
//
// Each subscriber has its own bounded queue. One that falls behind loses
// events exactly as if its own stream had broken and reconnected: after the
// events queued before the loss it gets one dd.EventLost, no event until it
// has drained that backlog, then one dd.EventResync (once the hub's stream
// is healthy too), and events again. The driver's own EventLost and
// EventResync (a daemon restart) reach every subscriber, merged with
// overflow: one Lost and one Resync per subscriber per outage, whatever the
// causes. Between the two a consumer must not act on the absence of events.
//
// What a subscriber is owed: every event the hub receives from the later of
// Subscribe and Start on, or an EventLost. Events from before are not its
// concern: a consumer lists the state it needs itself, after Subscribe has
// returned and the hub has started. A subscriber made while the hub's
// stream is broken first gets an EventLost, so it never trusts a silence it
// did not witness; one made before Start or on a healthy stream gets no
// signal. Events are shared between subscribers: treat Labels as read-only.
//
// The package knows nothing of Kubernetes and registers no metrics: Stats
// reports what was dropped, for the caller to export.
package eventhub

import (
	"context"
	"errors"
	"sync"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// ErrStarted is returned by Start on a hub already started.
var ErrStarted = errors.New("eventhub: hub already started")

// Hub is one Docker host's container event stream, fanned out to subscribers.
//
// A hub runs in sessions, one per Start: Stop (or the end of Start's ctx)
// ends the session, closing every subscriber's channel, and a later Start
// opens a new stream for the subscribers made after it. Its methods are safe
// for concurrent use; none calls back into the caller.
type Hub struct {
	driver dd.Driver

	mu sync.Mutex
	// cur accepts subscribers: the running session, or the one the next
	// Start will run; nil once stopped, until the next Start.
	cur *session
	// last is the most recent session, which Stop ends and waits for.
	last *session
	// counts are cumulative per subscriber name, across sessions.
	counts map[string]*counts
}

// session is one Start's stream and the subscribers made for it.
type session struct {
	stop    chan struct{} // closed when the session ends
	ended   bool
	started bool
	cancel  context.CancelFunc // the stream's, set by Start
	// driverLost: the driver's stream sent EventLost and no EventResync yet.
	driverLost bool
	subs       map[*sub]struct{}
	wg         sync.WaitGroup // the pump and every subscriber's goroutine
}

func newSession() *session {
	return &session{stop: make(chan struct{}), subs: map[*sub]struct{}{}}
}

// New returns a stopped hub for driver's host. Subscribers may be made before Start.
func New(driver dd.Driver) *Hub {
	s := newSession()
	return &Hub{driver: driver, cur: s, last: s, counts: map[string]*counts{}}
}

// Start opens the one unfiltered stream (driver.Events(ctx, dd.EventFilter{ExecDie: true}))
// and delivers until ctx ends or Stop; it returns at once. Starting a started
// hub is an error. When ctx ends the hub stops as if Stop had been called.
func (h *Hub) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.cur
	if s == nil {
		s = newSession()
		h.cur, h.last = s, s
	}
	if s.started {
		return ErrStarted
	}
	s.started = true
	sctx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	// Events returns at once: the driver connects in the background. Note:
	// exec_die too, so that a detached step's end wakes its object; consumers
	// skip the ones they do not want (every probe's exec ends with one).
	events := h.driver.Events(sctx, dd.EventFilter{ExecDie: true})
	s.wg.Add(1)
	go h.pump(s, events)
	return nil
}

// Stop ends the stream and closes every subscriber's channel; idempotent. It
// returns once they are closed and the hub's goroutines are gone. A stopped
// hub may be started again (new stream; subscribers made after that).
func (h *Hub) Stop() {
	h.mu.Lock()
	s := h.last
	h.end(s)
	h.mu.Unlock()
	s.wg.Wait()
}

// Subscribe adds a consumer; its channel is closed when the hub stops or ctx
// ends. buffer bounds how many events may wait for this consumer (at least
// 1; one more may be in hand-over). name identifies the consumer in Stats.
// On a stopped hub (after Stop, before the next Start) the channel is
// returned closed: the consumer should wait for the next Start and subscribe again.
func (h *Hub) Subscribe(ctx context.Context, name string, buffer int) <-chan dd.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.cur
	if s == nil {
		out := make(chan dd.Event)
		close(out)
		return out
	}
	c := h.counts[name]
	if c == nil {
		c = &counts{}
		h.counts[name] = c
	}
	sb := newSub(name, max(buffer, 1), c)
	if s.driverLost {
		sb.fallBehind()
	}
	s.subs[sb] = struct{}{}
	s.wg.Add(1)
	go h.deliver(ctx, s, sb)
	return sb.out
}

// end ends session s. Callers hold h.mu.
func (h *Hub) end(s *session) {
	if h.cur == s {
		h.cur = nil
	}
	if s.ended {
		return
	}
	s.ended = true
	close(s.stop)
	if s.cancel != nil {
		s.cancel()
	}
}

// pump reads the driver's stream into the subscribers' queues; it never
// blocks on a subscriber.
func (h *Hub) pump(s *session, events <-chan dd.Event) {
	defer s.wg.Done()
	for {
		select {
		case ev, ok := <-events:
			if !ok { // ctx ended (the driver closes its stream only then)
				h.mu.Lock()
				h.end(s)
				h.mu.Unlock()
				return
			}
			h.fanOut(s, ev)
		case <-s.stop:
			// Wait for the driver to close it, so that Stop leaves nothing running.
			for range events {
			}
			return
		}
	}
}

func (h *Hub) fanOut(s *session, ev dd.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch ev.Type {
	case dd.EventLost:
		s.driverLost = true
		for sb := range s.subs {
			sb.fallBehind()
		}
	case dd.EventResync:
		s.driverLost = false
		for sb := range s.subs {
			sb.maybeResync(false)
		}
	default:
		for sb := range s.subs {
			sb.offer(ev)
		}
	}
}

func lostEvent() dd.Event { return dd.Event{Type: dd.EventLost, Time: time.Now()} }
