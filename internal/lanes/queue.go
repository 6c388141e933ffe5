package lanes

import (
	"math"
	"slices"
	"time"
)

// state is where an entry stands.
type state int

const (
	// waiting: in its namespace's queue.
	waiting state = iota
	// offered: lanes granted while its owner was not asking; the owner was
	// woken and takes them on its next Acquire.
	offered
	// running: lanes taken (an Acquire answered granted, or a Hold).
	running
)

// entry is one step of one owner, waiting or holding lanes.
type entry struct {
	owner Owner
	key   string
	n     int
	state state
	seq   uint64    // arrival order
	seen  time.Time // the last Acquire (waiting), or the grant (offered)
}

// space is one namespace's share of a gate.
type space struct {
	queue  []*entry // its waiters, oldest first
	busy   int      // its lanes taken, Holds included
	served uint64   // the seq of its last grant: its place in the rotation
}

func (g *Gate) entry(owner Owner, key string) *entry { return g.entries[owner][key] }

// space is ns's share, made on first use.
func (g *Gate) space(ns string) *space {
	sp := g.spaces[ns]
	if sp == nil {
		sp = &space{}
		g.spaces[ns] = sp
	}
	return sp
}

// add queues a new waiter at the end of its namespace's queue.
func (g *Gate) add(owner Owner, key string, n int, now time.Time) *entry {
	g.seq++
	e := &entry{owner: owner, key: key, n: n, seq: g.seq, seen: now}
	if g.entries[owner] == nil {
		g.entries[owner] = map[string]*entry{}
	}
	g.entries[owner][key] = e
	sp := g.space(owner.Namespace)
	sp.queue = append(sp.queue, e)
	g.dirty = true
	return e
}

// remove forgets e, giving back its lanes or its place.
func (g *Gate) remove(e *entry) {
	if e.state == waiting {
		g.unqueue(e)
	} else {
		g.busy -= e.n
		g.spaces[e.owner.Namespace].busy -= e.n
	}
	delete(g.entries[e.owner], e.key)
	if len(g.entries[e.owner]) == 0 {
		delete(g.entries, e.owner)
	}
	g.tidy(e.owner.Namespace)
	g.dirty = true
}

// unqueue takes a waiter out of its namespace's queue.
func (g *Gate) unqueue(e *entry) {
	sp := g.spaces[e.owner.Namespace]
	if i := slices.Index(sp.queue, e); i >= 0 {
		sp.queue = slices.Delete(sp.queue, i, i+1)
	}
	g.dirty = true
}

// take counts e's lanes as taken.
func (g *Gate) take(e *entry) {
	g.busy += e.n
	g.space(e.owner.Namespace).busy += e.n
	g.dirty = true
}

// tidy forgets a namespace that neither waits nor runs and was never
// served. One that was keeps its place in the rotation (prune forgets it
// later): were it forgotten at once, a namespace that ends its step and asks
// again would always go before those waiting since its last turn.
func (g *Gate) tidy(ns string) {
	if sp := g.spaces[ns]; sp != nil && sp.idle() && sp.served == 0 {
		delete(g.spaces, ns)
	}
}

func (sp *space) idle() bool { return sp.busy == 0 && len(sp.queue) == 0 }

// prune forgets the idle namespaces served before every namespace that
// waits: back, they go before all those, as a namespace never served does.
func (g *Gate) prune() {
	oldest := uint64(math.MaxUint64)
	for _, sp := range g.spaces {
		if len(sp.queue) > 0 {
			oldest = min(oldest, sp.served)
		}
	}
	for ns, sp := range g.spaces {
		if sp.idle() && sp.served < oldest {
			delete(g.spaces, ns)
		}
	}
}

// settle grants lanes while the namespace whose turn it is fits on the host;
// it returns the grants. When the oldest waiter of that namespace needs more
// lanes than are free, nobody is granted until they are: a step asking for k
// lanes is never overtaken forever by steps of one. It looks for a turn only
// when the queues or the lanes changed since it last did (most calls are
// waiters asking again).
func (g *Gate) settle(now time.Time) (granted []*entry) {
	for g.dirty {
		if g.busy >= g.perHost { // nothing fits: spare the look (the common case)
			g.dirty = false
			return granted
		}
		sp := g.turn()
		if sp == nil || !fits(g.busy, sp.queue[0].n, g.perHost) {
			g.dirty = false
			return granted
		}
		head := sp.queue[0]
		g.unqueue(head)
		g.take(head)
		head.state, head.seen = offered, now
		g.seq++
		sp.served = g.seq
		granted = append(granted, head)
	}
	return granted
}

// turn is the namespace to serve next, or nil: of those whose oldest waiter
// fits under the namespace's cap, the one served longest ago (never served
// first), ties to the oldest waiter. Serving the least recently served is
// round robin in which a namespace that just arrived goes before one served
// already.
func (g *Gate) turn() *space {
	var best *space
	for _, sp := range g.spaces {
		if len(sp.queue) == 0 || !fits(sp.busy, sp.queue[0].n, g.perNamespace) {
			continue
		}
		if best == nil || sp.before(best) {
			best = sp
		}
	}
	return best
}

// before says sp has its turn before o.
func (sp *space) before(o *space) bool {
	if sp.served != o.served {
		return sp.served < o.served
	}
	return sp.queue[0].seq < o.queue[0].seq
}

// fits says n more lanes fit beside busy under limit; n lanes always fit
// where none are busy, so that a request larger than a cap runs alone.
func fits(busy, n, limit int) bool { return busy == 0 || busy+n <= limit }

// sweep forgets waiters that stopped asking, and lanes granted to owners that
// never came to take them, past forgetAfter: their objects were deleted
// without a Release, and they must not block the others forever. It reads
// every entry, so it runs at most every quarter of forgetAfter: a stale
// waiter goes between forgetAfter and 1.25 × forgetAfter after its last call.
// It prunes the namespaces that no longer matter then too. It returns the
// time now, for the rest of the caller's call.
func (g *Gate) sweep() (now time.Time) {
	now = g.now()
	if now.Sub(g.swept) < g.forgetAfter/4 {
		return now
	}
	g.swept = now
	for _, keys := range g.entries {
		for _, e := range keys {
			if e.state != running && now.Sub(e.seen) > g.forgetAfter {
				g.remove(e)
			}
		}
	}
	g.prune()
	return now
}
