package host

import (
	"context"
	"strings"
	"sync"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// InlineCreateWait is how long Ensure waits for a container's create and start:
// on a quiet host most end within it, and the pass goes on with the container.
// One that takes longer (a loaded host starts a container in over a second)
// goes on beside the passes, and its waiter is told when it ends.
const InlineCreateWait = 300 * time.Millisecond

// freshCreate is how long an ended create's result stands for the next pass
// of its waiter (told at once); past it the container is observed instead.
const freshCreate = 5 * time.Second

// creates runs container creates (create, copy files, start) off the passes,
// one per container name.
type creates struct {
	mu     sync.Mutex
	byName map[string]*creation
}

// creation is one container's create, under way or ended and not yet taken.
type creation struct {
	name, owner string // owner: the value of the spec's owner label
	waiter      string
	started     time.Time
	cancel      context.CancelFunc
	done        chan struct{}
	// Set when done is closed, under creates.mu.
	c        dd.Container
	err      error
	ended    time.Time
	detached bool // no caller waits for it inline: its end is told to waiter
}

func newCreates() *creates { return &creates{byName: map[string]*creation{}} }

// join returns the creation of spec's container, starting it under bg (the
// manager's lifetime) when none is under way. One of another owner (an ended
// create of a deleted Sandbox's container) is dropped first.
func (cs *creates) join(bg context.Context, spec dd.ContainerSpec, waiter string,
	create func(context.Context, dd.ContainerSpec) (dd.Container, error), notify func(string)) *creation {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.expire()
	owner := spec.Labels[spec.OwnerLabel]
	if cr := cs.byName[spec.Name]; cr != nil && cr.owner == owner && (cr.ended.IsZero() || time.Since(cr.ended) < freshCreate) {
		cr.waiter = waiter
		return cr
	}
	ctx, cancel := context.WithCancel(bg)
	cr := &creation{name: spec.Name, owner: owner, waiter: waiter, started: time.Now(), cancel: cancel, done: make(chan struct{})}
	cs.byName[spec.Name] = cr
	go func() {
		defer cancel()
		c, err := create(ctx, spec)
		cs.mu.Lock()
		cr.c, cr.err, cr.ended = c, err, time.Now()
		tell, waiter := cr.detached, cr.waiter
		cs.mu.Unlock()
		close(cr.done)
		if tell {
			notify(waiter)
		}
	}()
	return cr
}

// await waits up to d (or ctx) for cr to end. An ended one is taken: its result
// is the caller's, and the next pass observes the container. Otherwise cr goes
// on beside the passes, and its end is told to its waiter.
func (cs *creates) await(ctx context.Context, cr *creation, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-cr.done:
	case <-t.C:
	case <-ctx.Done():
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cr.ended.IsZero() {
		cr.detached = true
		return false
	}
	if cs.byName[cr.name] == cr {
		delete(cs.byName, cr.name)
	}
	return true
}

// pending says whether name's container has a create under way, or one ended
// for owner that no pass has taken yet.
func (cs *creates) pending(name, owner string) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cr := cs.byName[name]
	return cr != nil && cr.owner == owner && (cr.ended.IsZero() || time.Since(cr.ended) < freshCreate)
}

// cancel cuts short the creates under way that match (a create cut short
// removes what it made), and counts them: their ends are still to come.
func (cs *creates) cancelWhere(match func(*creation) bool) int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	n := 0
	for _, cr := range cs.byName {
		if cr.ended.IsZero() && match(cr) {
			cr.cancel()
			cr.detached = true
			n++
		}
	}
	return n
}

// prefixed names the creates under way of the containers named with prefix
// (a pool's members), and takes the failures of those that ended.
func (cs *creates) prefixed(prefix string) (underway map[string]bool, failed []error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	underway = map[string]bool{}
	for name, cr := range cs.byName {
		switch {
		case !strings.HasPrefix(name, prefix):
		case cr.ended.IsZero():
			underway[name] = true
		default:
			if cr.err != nil {
				failed = append(failed, cr.err)
			}
			delete(cs.byName, name)
		}
	}
	return underway, failed
}

// expire drops ended creates no pass took within freshCreate; cs.mu is held.
func (cs *creates) expire() {
	for name, cr := range cs.byName {
		if !cr.ended.IsZero() && time.Since(cr.ended) >= freshCreate {
			delete(cs.byName, name)
		}
	}
}
