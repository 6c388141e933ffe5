package host

import (
	"context"
	"fmt"
	"sync"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/flight"
)

// PoolWaiterPrefix marks a pool's waiter ("pool:<namespace>/<name>"); any
// other waiter is a Sandbox's key.
const PoolWaiterPrefix = "pool:"

// presentRetry is when to ask again after Docker failed to say whether an image is present.
const presentRetry = 5 * time.Second

// Pulls runs image pulls off the callers' goroutines. A caller asks for an image;
// when it is absent a background pull starts (one per reference, shared by every
// caller waiting for it) and the caller returns at once. When the pull ends, every
// waiter is told through notify.
type Pulls struct {
	driver  dd.Driver
	notify  func(waiter string)
	observe func(elapsed time.Duration, err error)
	group   flight.Group[dd.PullProgress]

	mu       sync.Mutex
	inflight map[string]*flight.Flight[dd.PullProgress]
	waiters  map[string]map[string]struct{}
	failed   map[string]failure
	// Note: pulls outlive the caller that started them, so they run under this
	// context (the manager's), never under a request's.
	ctx context.Context
}

type failure struct {
	err      error
	count    int
	finished time.Time
}

// PullState is what a caller learns about an image.
type PullState struct {
	Present  bool
	Elapsed  time.Duration
	Progress dd.PullProgress
	// Err is the last pull's failure (or Docker's, asked whether the image is
	// present); RetryIn is when to ask again.
	Err     error
	RetryIn time.Duration
}

// NewPulls pulls through driver; notify is told the waiters of a finished pull,
// observe (may be nil) every pull's duration and result.
func NewPulls(driver dd.Driver, notify func(waiter string), observe func(time.Duration, error)) *Pulls {
	if observe == nil {
		observe = func(time.Duration, error) {}
	}
	return &Pulls{driver: driver, notify: notify, observe: observe, ctx: context.Background(),
		inflight: map[string]*flight.Flight[dd.PullProgress]{}, waiters: map[string]map[string]struct{}{}, failed: map[string]failure{}}
}

// Start binds pulls to ctx (the manager's lifetime).
func (p *Pulls) Start(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ctx = ctx
}

// background is the manager's lifetime, under which work that outlives its
// pass runs.
func (p *Pulls) background() context.Context {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ctx
}

// Ensure reports whether ref is present, starting a background pull for waiter
// when it is not. It never waits for a pull.
func (p *Pulls) Ensure(ctx context.Context, ref, waiter string) PullState {
	if st, known := p.known(ref, waiter); known {
		return st
	}
	present, err := p.driver.ImagePresent(ctx, ref)
	switch {
	case err != nil:
		return PullState{Err: err, RetryIn: presentRetry}
	case present:
		p.mu.Lock()
		delete(p.failed, ref)
		p.mu.Unlock()
		return PullState{Present: true}
	}
	return p.start(ctx, ref, waiter)
}

// known answers from a pull in flight or a recent failure, registering waiter.
func (p *Pulls) known(ref, waiter string) (PullState, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if f, ok := p.inflight[ref]; ok {
		p.wait(ref, waiter)
		return PullState{Elapsed: time.Since(f.Started()), Progress: f.Last()}, true
	}
	if fl, ok := p.failed[ref]; ok {
		if left := Delay(PullBackoff, fl.count-1) - time.Since(fl.finished); left > 0 {
			return PullState{Err: fl.err, RetryIn: left}, true
		}
	}
	return PullState{}, false
}

// start starts the pull, for the proof of the caller's pass (dd.CarryProof).
func (p *Pulls) start(caller context.Context, ref, waiter string) PullState {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.wait(ref, waiter)
	if f, ok := p.inflight[ref]; ok {
		return PullState{Elapsed: time.Since(f.Started()), Progress: f.Last()}
	}
	ctx := dd.CarryProof(p.ctx, caller)
	f, _ := p.group.Join(ref, dd.PullProgress{Ref: ref, Status: "Waiting"}, func(publish func(dd.PullProgress)) error {
		err := p.driver.PullImage(ctx, ref, publish)
		p.finish(ref, err)
		return err
	})
	p.inflight[ref] = f
	return PullState{Progress: f.Last()}
}

func (p *Pulls) wait(ref, waiter string) {
	if p.waiters[ref] == nil {
		p.waiters[ref] = map[string]struct{}{}
	}
	p.waiters[ref][waiter] = struct{}{}
}

// finish records a pull's end and tells its waiters.
func (p *Pulls) finish(ref string, err error) {
	p.mu.Lock()
	f := p.inflight[ref]
	delete(p.inflight, ref)
	if err != nil {
		p.failed[ref] = failure{err: err, count: p.failed[ref].count + 1, finished: time.Now()}
	} else {
		delete(p.failed, ref)
	}
	waiters := p.waiters[ref]
	delete(p.waiters, ref)
	p.mu.Unlock()

	if f != nil {
		p.observe(time.Since(f.Started()), err)
	}
	for w := range waiters {
		p.notify(w)
	}
}

// Describe is the message for a pull in progress.
func (s PullState) Describe(ref string) string {
	msg := fmt.Sprintf("pulling %s for %s", ref, s.Elapsed.Round(time.Second))
	if s.Progress.Layers > 0 {
		msg += fmt.Sprintf(" (%d/%d layers", s.Progress.LayersDone, s.Progress.Layers)
		if s.Progress.BytesTotal > 0 {
			msg += fmt.Sprintf(", %d/%d MB", s.Progress.BytesDone>>20, s.Progress.BytesTotal>>20)
		}
		msg += ")"
	}
	return msg
}
