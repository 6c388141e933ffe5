package lanes

import (
	"fmt"
	"sync"
	"time"
)

// Owner is the object a step runs for: the one a wake names. UID tells a
// recreated object from the one deleted under the same name.
type Owner struct {
	Namespace string
	Name      string
	UID       string
}

// Gate admits the steps of one Docker host. Its methods are safe for
// concurrent use and never block on anything but its own short lock.
//
// A step is named by its owner and a key the caller chooses (the step's
// key, so that a changed request is another step: Release the old one). A
// granted step keeps its lanes until Released, however long it runs and
// whether or not its owner asks again; only waiters and lanes granted but
// never taken are forgotten.
type Gate struct {
	mu           sync.Mutex
	perHost      int
	perNamespace int
	now          func() time.Time
	forgetAfter  time.Duration
	wake         func(Owner)

	entries map[Owner]map[string]*entry
	spaces  map[string]*space // the namespaces that wait, run, or keep their turn
	busy    int               // lanes taken on the host, Holds included
	seq     uint64
	swept   time.Time
	dirty   bool // the queues or the lanes changed since settle last looked
}

// Option sets what New does not take as an argument.
type Option func(*Gate)

// WithClock reads the time from now (tests pass a fake clock).
func WithClock(now func() time.Time) Option { return func(g *Gate) { g.now = now } }

// WithForgetAfter sets how long a waiter that stops asking keeps its place,
// and how long a lane granted to an owner that never comes to take it stays
// its own (DefaultForgetAfter).
func WithForgetAfter(d time.Duration) Option { return func(g *Gate) { g.forgetAfter = d } }

// WithWake calls wake with the owner of each lane granted to a waiter other
// than the caller, after the gate's lock is released. It must not block for
// long: it runs on the caller's goroutine (a reconcile worker). A
// controller's source.Channel fed by a buffered channel is the intended use.
func WithWake(wake func(Owner)) Option { return func(g *Gate) { g.wake = wake } }

// New is the gate of one host: at most perHost lanes taken at once, at most
// perNamespace by one namespace. A perHost below 1 counts as 1, and a
// perNamespace below 1 or above perHost as perHost (Validate refuses both,
// for flags).
func New(perHost, perNamespace int, opts ...Option) *Gate {
	perHost = max(perHost, 1)
	if perNamespace < 1 || perNamespace > perHost {
		perNamespace = perHost
	}
	g := &Gate{
		perHost:      perHost,
		perNamespace: perNamespace,
		now:          time.Now,
		forgetAfter:  DefaultForgetAfter,
		entries:      map[Owner]map[string]*entry{},
		spaces:       map[string]*space{},
	}
	for _, o := range opts {
		o(g)
	}
	return g
}

// Validate says why a pair of caps is not one an operator means, or nil.
func Validate(perHost, perNamespace int) error {
	if perHost < 1 {
		return fmt.Errorf("--%s must be at least 1, not %d", PerHostFlag, perHost)
	}
	if perNamespace < 1 || perNamespace > perHost {
		return fmt.Errorf("--%s must be between 1 and --%s (%d), not %d",
			PerNamespaceFlag, PerHostFlag, perHost, perNamespace)
	}
	return nil
}

// Acquire asks for n lanes (all or none; below 1 counts as 1) for owner's step
// key, and says whether they are granted, or where the step waits. It is
// idempotent: a pass calls it on every pass; a waiter keeps its place (n is
// updated while it waits, never once granted); a granted step stays granted
// until Released. A request larger than a cap is granted when it runs alone
// under that cap, so it never waits forever.
func (g *Gate) Acquire(owner Owner, key string, n int) Ticket {
	g.mu.Lock()
	now := g.sweep()
	e := g.entry(owner, key)
	switch {
	case e == nil:
		e = g.add(owner, key, max(n, 1), now)
	case e.state == waiting:
		e.seen = now
		if e.n != max(n, 1) {
			e.n, g.dirty = max(n, 1), true
		}
	}
	granted := g.settle(now)
	if e.state == offered {
		e.state = running
	}
	t := g.ticket(e)
	g.mu.Unlock()
	g.wakeAll(granted, e)
	return t
}

// Hold counts owner's step key as running on n lanes whatever the caps: a
// step found running in its container (after a manager restart) runs whether
// the gate agrees or not. It takes a waiter's place out of its queue; a step
// already granted keeps its lanes.
func (g *Gate) Hold(owner Owner, key string, n int) {
	g.mu.Lock()
	now := g.sweep()
	e := g.entry(owner, key)
	if e == nil {
		e = g.add(owner, key, max(n, 1), now)
	}
	if e.state == waiting {
		g.unqueue(e)
		e.n = max(n, 1)
		g.take(e)
	}
	e.state = running
	granted := g.settle(now)
	g.mu.Unlock()
	g.wakeAll(granted, nil)
}

// Release gives back owner's step key, granted or waiting: its step ended or
// was cancelled, or will not start. Releasing what the gate does not hold is
// a no-op.
func (g *Gate) Release(owner Owner, key string) {
	g.mu.Lock()
	now := g.sweep()
	if e := g.entry(owner, key); e != nil {
		g.remove(e)
	}
	granted := g.settle(now)
	g.mu.Unlock()
	g.wakeAll(granted, nil)
}

// ReleaseOwner releases every step of owner (its object is deleted).
func (g *Gate) ReleaseOwner(owner Owner) {
	g.mu.Lock()
	now := g.sweep()
	for _, e := range g.entries[owner] {
		g.remove(e)
	}
	granted := g.settle(now)
	g.mu.Unlock()
	g.wakeAll(granted, nil)
}

// wakeAll tells the owners of granted that their turn came, once each, but
// not the caller, whose Acquire answers it.
func (g *Gate) wakeAll(granted []*entry, caller *entry) {
	if g.wake == nil {
		return
	}
	woken := map[Owner]bool{}
	for _, e := range granted {
		if e != caller && !woken[e.owner] {
			woken[e.owner] = true
			g.wake(e.owner)
		}
	}
}
