package lanes

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestInvariants runs random calls on gates of several caps, with a clock
// that moves, and checks after each that the gate's counts add up and that
// nothing it could grant waits.
func TestInvariants(t *testing.T) {
	for _, caps := range [][2]int{{1, 1}, {2, 1}, {4, 2}, {5, 5}} {
		now := time.Unix(0, 0)
		g := New(caps[0], caps[1], WithClock(func() time.Time { return now }), WithForgetAfter(time.Minute))
		r := rand.New(rand.NewPCG(1, uint64(caps[0])))
		for i := range 20000 {
			now = now.Add(time.Duration(r.IntN(3000)) * time.Millisecond)
			op := randomCall(g, r)
			if err := g.check(); err != nil {
				t.Fatalf("caps %v, call %d (%s): %v", caps, i, op, err)
			}
		}
	}
}

// randomCall makes one call of a random kind on a random step.
func randomCall(g *Gate, r *rand.Rand) string {
	o := Owner{Namespace: fmt.Sprint("ns", r.IntN(6)), Name: fmt.Sprint(r.IntN(5))}
	key, n := fmt.Sprint(r.IntN(2)), 1+r.IntN(3)
	switch c := r.IntN(20); {
	case c < 12:
		g.Acquire(o, key, n)
		return fmt.Sprint("Acquire ", o, key, n)
	case c < 13:
		g.Hold(o, key, n)
		return fmt.Sprint("Hold ", o, key, n)
	case c < 19:
		g.Release(o, key)
		return fmt.Sprint("Release ", o, key)
	default:
		g.ReleaseOwner(o)
		return fmt.Sprint("ReleaseOwner ", o)
	}
}

// check says how g's state is not what its calls should leave, or nil.
func (g *Gate) check() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	busy, spaces := 0, map[string]int{}
	for o, keys := range g.entries {
		for k, e := range keys {
			sp := g.spaces[o.Namespace]
			switch {
			case e.owner != o || e.key != k || sp == nil:
				return fmt.Errorf("entry %v %s misfiled", o, k)
			case e.state == waiting && !slices.Contains(sp.queue, e):
				return fmt.Errorf("waiter %v %s in no queue", o, k)
			case e.state != waiting:
				busy += e.n
				spaces[o.Namespace] += e.n
			}
		}
	}
	if busy != g.busy {
		return fmt.Errorf("busy %d, entries hold %d", g.busy, busy)
	}
	for ns, sp := range g.spaces {
		if sp.busy != spaces[ns] {
			return fmt.Errorf("%s busy %d, entries hold %d", ns, sp.busy, spaces[ns])
		}
		for _, e := range sp.queue {
			if e.state != waiting || g.entries[e.owner][e.key] != e {
				return fmt.Errorf("%s queues %v %s, not a waiter", ns, e.owner, e.key)
			}
		}
		if sp.idle() && sp.served == 0 {
			return fmt.Errorf("%s kept, never served and idle", ns)
		}
	}
	if sp := g.turn(); sp != nil && fits(g.busy, sp.queue[0].n, g.perHost) {
		return fmt.Errorf("%v %s waits with its lanes free", sp.queue[0].owner, sp.queue[0].key)
	}
	return nil
}

// TestPrune: the gate's memory follows what waits and runs: namespaces that
// ran once and left are forgotten within a sweep.
func TestPrune(t *testing.T) {
	now := time.Unix(0, 0)
	g := New(2, 1, WithClock(func() time.Time { return now }), WithForgetAfter(time.Minute))
	for i := range 100 {
		o := Owner{Namespace: fmt.Sprint("ns", i), Name: "x"}
		g.Acquire(o, "seed", 1)
		g.Release(o, "seed")
	}
	w := Owner{Namespace: "w", Name: "x"}
	g.Acquire(w, "seed", 1) // served last: every namespace before it goes
	now = now.Add(time.Minute)
	g.Acquire(Owner{Namespace: "y", Name: "x"}, "seed", 1)
	if len(g.spaces) != 2 {
		t.Fatalf("%d namespaces kept, want the 2 that run", len(g.spaces))
	}
}
