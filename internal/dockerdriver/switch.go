package dockerdriver

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// Switch is a DockerHost's driver that can be re-dialled when its endpoint
// or TLS material changes: the host's controllers keep the switch, which
// forwards to the current driver, and the old one is closed. The daemon behind
// the new driver may be another host: its event streams break at the swap
// (EventLost, then EventResync once they follow the new driver), so that their
// consumers re-list and the host's identity is proven again.
type Switch struct {
	cur atomic.Pointer[dialled]

	mu sync.Mutex
	// swapped is closed at the next Swap.
	swapped chan struct{}
}

// dialled is one dial's driver; n counts the dials before it.
type dialled struct {
	d Driver
	n uint64
}

// NewSwitch forwards to d until the first Swap.
func NewSwitch(d Driver) *Switch {
	s := &Switch{swapped: make(chan struct{})}
	s.cur.Store(&dialled{d: d})
	return s
}

func (s *Switch) get() Driver { return s.cur.Load().d }

// at is the driver for a call of ctx: refused when ctx's pass proved an
// earlier dial (WithProof). The dial is read once: a call that races a Swap
// reaches the closed driver of its proof, never the new one.
func (s *Switch) at(ctx context.Context, op, ref string) (Driver, error) {
	cur := s.cur.Load()
	if n, ok := provenDial(ctx); ok && n != cur.n {
		return nil, NewError(op, ref, ErrUnavailable, errRedialled)
	}
	return cur.d, nil
}

// Swap makes d the driver and closes the one before.
func (s *Switch) Swap(d Driver) {
	s.mu.Lock()
	old := s.cur.Load()
	s.cur.Store(&dialled{d: d, n: old.n + 1})
	close(s.swapped)
	s.swapped = make(chan struct{})
	s.mu.Unlock()
	if c, ok := old.d.(io.Closer); ok {
		_ = c.Close()
	}
}

// current is the driver, and what is closed when it is swapped.
func (s *Switch) current() (Driver, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.get(), s.swapped
}

// Events streams the current driver's events, and at each swap ends that
// stream and follows the new driver's: an EventLost, then the new stream
// opened, then an EventResync, as a reconnection to a restarted daemon gives.
// A consumer re-lists at the EventResync, after the new stream exists: nothing
// falls between (one that cannot connect says so with its own EventLost).
func (s *Switch) Events(ctx context.Context, filter EventFilter) <-chan Event {
	out := make(chan Event, 64)
	in, swapped, cancel := s.open(ctx, filter)
	go func() {
		defer close(out)
		for {
			again := forward(ctx, in, out, swapped)
			cancel()
			if !again || !send(ctx, out, Event{Type: EventLost, Time: time.Now()}) {
				return
			}
			in, swapped, cancel = s.open(ctx, filter)
			if !send(ctx, out, Event{Type: EventResync, Time: time.Now()}) {
				cancel()
				return
			}
		}
	}()
	return out
}

// open starts the current driver's stream, ended by cancel or at the next swap.
func (s *Switch) open(ctx context.Context, filter EventFilter) (<-chan Event, <-chan struct{}, context.CancelFunc) {
	d, swapped := s.current()
	sctx, cancel := context.WithCancel(ctx)
	return d.Events(sctx, filter), swapped, cancel
}

// forward passes in's events to out until ctx ends or in closes (false) or the
// driver is swapped (true).
func forward(ctx context.Context, in <-chan Event, out chan<- Event, swapped <-chan struct{}) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-swapped:
			return true
		case ev, ok := <-in:
			if !ok {
				return false
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return false
			case <-swapped:
				return true
			}
		}
	}
}
