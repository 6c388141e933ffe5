package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// pullTracker runs image pulls off the reconcile workers. A reconcile asks for an
// image; when it is absent a background pull starts (one per reference, shared by
// every Sandbox waiting for it) and the reconcile returns at once. When the pull
// ends, every waiting Sandbox is re-queued through notify.
type pullTracker struct {
	driver  dd.Driver
	notify  func(types.NamespacedName)
	metrics *metrics

	mu    sync.Mutex
	pulls map[string]*pull
	// Note: pulls outlive the reconcile that started them, so they run under this
	// context (the manager's), never under a request's.
	ctx context.Context
}

type pull struct {
	started, finished time.Time
	done              bool
	err               error
	failures          int
	progress          dd.PullProgress
	waiters           map[types.NamespacedName]struct{}
}

// pullState is what a reconcile learns about an image.
type pullState struct {
	present  bool
	pulling  bool
	elapsed  time.Duration
	progress dd.PullProgress
	err      error
	retryIn  time.Duration
}

func newPullTracker(driver dd.Driver, m *metrics, notify func(types.NamespacedName)) *pullTracker {
	return &pullTracker{driver: driver, notify: notify, metrics: m, pulls: map[string]*pull{}, ctx: context.Background()}
}

// start binds pulls to the manager's lifetime.
func (p *pullTracker) start(ctx context.Context) {
	p.mu.Lock()
	p.ctx = ctx
	p.mu.Unlock()
}

// pullBackoff spaces retries of a failing pull: 5 s, doubling, at most 5 min.
func pullBackoff(failures int) time.Duration {
	d := 5 * time.Second
	for i := 1; i < failures && d < 5*time.Minute; i++ {
		d *= 2
	}
	return min(d, 5*time.Minute)
}

// ensure reports whether ref is present, starting a background pull for waiter when
// it is not. It never waits for a pull.
func (p *pullTracker) ensure(ctx context.Context, ref string, waiter types.NamespacedName) pullState {
	now := time.Now()
	p.mu.Lock()
	if pl, ok := p.pulls[ref]; ok {
		switch {
		case !pl.done:
			pl.waiters[waiter] = struct{}{}
			st := pullState{pulling: true, elapsed: now.Sub(pl.started), progress: pl.progress}
			p.mu.Unlock()
			return st
		case pl.err == nil:
			// Pulled; forget it, so a later removal of the image is noticed.
			delete(p.pulls, ref)
		case now.Sub(pl.finished) < pullBackoff(pl.failures):
			pl.waiters[waiter] = struct{}{}
			st := pullState{err: pl.err, retryIn: pullBackoff(pl.failures) - now.Sub(pl.finished)}
			p.mu.Unlock()
			return st
		}
	}
	p.mu.Unlock()

	present, err := p.driver.ImagePresent(ctx, ref)
	if err != nil {
		return pullState{err: err, retryIn: 5 * time.Second}
	}
	if present {
		return pullState{present: true}
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	pl, ok := p.pulls[ref]
	if ok && !pl.done {
		pl.waiters[waiter] = struct{}{}
		return pullState{pulling: true, elapsed: now.Sub(pl.started), progress: pl.progress}
	}
	failures := 0
	if ok {
		failures = pl.failures
	}
	pl = &pull{started: now, failures: failures, waiters: map[types.NamespacedName]struct{}{waiter: {}}}
	p.pulls[ref] = pl
	go p.run(p.ctx, ref, pl)
	return pullState{pulling: true}
}

func (p *pullTracker) run(ctx context.Context, ref string, pl *pull) {
	err := p.driver.PullImage(ctx, ref, func(pr dd.PullProgress) {
		p.mu.Lock()
		pl.progress = pr
		p.mu.Unlock()
	})
	p.mu.Lock()
	pl.done, pl.err, pl.finished = true, err, time.Now()
	if err != nil {
		pl.failures++
	}
	waiters := pl.waiters
	pl.waiters = map[types.NamespacedName]struct{}{}
	elapsed := pl.finished.Sub(pl.started)
	p.mu.Unlock()

	p.metrics.observePull(elapsed, err)
	for w := range waiters {
		p.notify(w)
	}
}

// describe is the ImagesReady message for a pull in progress.
func (s pullState) describe(ref string) string {
	msg := fmt.Sprintf("pulling %s for %s", ref, s.elapsed.Round(time.Second))
	if s.progress.Layers > 0 {
		msg += fmt.Sprintf(" (%d/%d layers", s.progress.LayersDone, s.progress.Layers)
		if s.progress.BytesTotal > 0 {
			msg += fmt.Sprintf(", %d/%d MB", s.progress.BytesDone>>20, s.progress.BytesTotal>>20)
		}
		msg += ")"
	}
	return msg
}
