package flight

import (
	"sync"
	"time"
)

// Flight is one run shared by every caller that joined it.
type Flight[P any] struct {
	done    chan struct{}
	started time.Time

	// send serializes deliveries, so a subscriber never sees an older
	// snapshot after a newer one and detach can wait out a delivery.
	send sync.Mutex

	mu       sync.Mutex
	last     P
	subs     map[int]func(P)
	nextID   int
	finished bool
	err      error
	onDone   []func(error)
}

func newFlight[P any](initial P) *Flight[P] {
	return &Flight[P]{done: make(chan struct{}), started: time.Now(), last: initial, subs: map[int]func(P){}}
}

// Done is closed when the run has returned.
func (f *Flight[P]) Done() <-chan struct{} { return f.done }

// Err is what the run returned; valid after Done is closed (nil before).
func (f *Flight[P]) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// Last is the latest published progress (the initial value before any).
func (f *Flight[P]) Last() P {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

// Started is when the flight was started.
func (f *Flight[P]) Started() time.Time { return f.started }

// Attach calls fn with the latest progress at once (in the caller's
// goroutine), then on every publish from run's goroutine, until detach.
// fn must not block, nor Attach to or detach from this flight (deliveries
// are serialized). detach is idempotent; once it returns fn is not called again.
func (f *Flight[P]) Attach(fn func(P)) (detach func()) {
	if fn == nil {
		return func() {}
	}
	f.send.Lock()
	defer f.send.Unlock()
	f.mu.Lock()
	id := f.nextID
	f.nextID++
	f.subs[id] = fn
	p := f.last
	f.mu.Unlock()
	fn(p)
	return func() {
		f.send.Lock()
		defer f.send.Unlock()
		f.mu.Lock()
		delete(f.subs, id)
		f.mu.Unlock()
	}
}

func (f *Flight[P]) publish(p P) {
	f.send.Lock()
	defer f.send.Unlock()
	f.mu.Lock()
	f.last = p
	subs := make([]func(P), 0, len(f.subs))
	for _, fn := range f.subs {
		subs = append(subs, fn)
	}
	f.mu.Unlock()
	for _, fn := range subs {
		fn(p)
	}
}

// OnDone calls fn once the flight ends: from the finishing goroutine (run's,
// after Done is closed), or at once in the caller's goroutine if it already
// has ended. Callbacks registered before the end run in order.
func (f *Flight[P]) OnDone(fn func(err error)) {
	f.mu.Lock()
	if !f.finished {
		f.onDone = append(f.onDone, fn)
		f.mu.Unlock()
		return
	}
	err := f.err
	f.mu.Unlock()
	fn(err)
}

func (f *Flight[P]) finish(err error) {
	f.mu.Lock()
	f.err, f.finished = err, true
	cbs := f.onDone
	f.onDone = nil
	close(f.done) // under mu: an OnDone that sees finished also sees Done closed
	f.mu.Unlock()
	for _, fn := range cbs {
		fn(err)
	}
}
