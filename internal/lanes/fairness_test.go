package lanes_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/roboco-sandbox/sandbox-controller/internal/lanes"
)

// sim plays reconcilers over one gate: an object asks when it arrives and on
// each pass its wake brings; the oldest running step ends at each tick.
type sim struct {
	t       *testing.T
	g       *lanes.Gate
	w       *wakes
	running []lanes.Owner // oldest first
	order   []string      // the starts, in order
	peak    map[string]int
}

func newSim(t *testing.T, perHost, perNamespace int) *sim {
	s := &sim{t: t, w: &wakes{}, peak: map[string]int{}}
	s.g = lanes.New(perHost, perNamespace, lanes.WithWake(s.w.wake))
	return s
}

// ask is o's pass: it asks for its seed and starts it once granted.
func (s *sim) ask(o lanes.Owner) {
	if tk := s.g.Acquire(o, "seed", 1); tk.Granted && !slices.Contains(s.running, o) {
		s.running = append(s.running, o)
		s.order = append(s.order, o.Namespace+"/"+o.Name)
		for ns, l := range s.g.Snapshot().Namespaces {
			s.peak[ns] = max(s.peak[ns], l.Busy)
		}
	}
}

// passes runs the passes the gate's wakes asked for, in the order woken.
func (s *sim) passes() {
	for _, o := range s.w.take() {
		s.ask(o)
	}
}

// arrive is o created: its first pass.
func (s *sim) arrive(o lanes.Owner) {
	s.ask(o)
	s.passes()
}

// tick ends the oldest running step; false when none runs.
func (s *sim) tick() bool {
	if len(s.running) == 0 {
		return false
	}
	o := s.running[0]
	s.running = s.running[1:]
	s.g.Release(o, "seed")
	s.passes()
	return true
}

// TestFairness: namespace A queues 20 seeds, then namespace B one; B's
// starts before A's (M+1)th, whatever the caps, and A never runs more than M.
func TestFairness(t *testing.T) {
	for _, c := range []struct{ perHost, perNamespace int }{
		{lanes.DefaultPerHost, lanes.DefaultPerNamespace}, {1, 1}, {2, 2}, {3, 1}, {5, 2}, {4, 4},
	} {
		s := newSim(t, c.perHost, c.perNamespace)
		for i := range 20 {
			s.arrive(own("a", name("a", i)))
		}
		s.arrive(own("b", "b00"))
		for s.tick() {
		}
		if len(s.order) != 21 {
			t.Fatalf("N=%d M=%d: %d started, want 21: %v", c.perHost, c.perNamespace, len(s.order), s.order)
		}
		b := slices.Index(s.order, "b/b00")
		if b > c.perNamespace {
			t.Errorf("N=%d M=%d: B's seed was start number %d, after A's (M+1)th: %v",
				c.perHost, c.perNamespace, b+1, s.order)
		}
		if s.peak["a"] > c.perNamespace {
			t.Errorf("N=%d M=%d: A ran %d at once", c.perHost, c.perNamespace, s.peak["a"])
		}
		mustBusy(t, s.g, 0, 0)
	}
}

// TestRoundRobin: each Release wakes the next waiter in round-robin order
// across namespaces, one namespace after the other, oldest first within each.
func TestRoundRobin(t *testing.T) {
	for _, c := range []struct {
		perHost, perNamespace int
		arrivals              []string // ns/name in arrival order
		want                  []string // starts in order
	}{{
		perHost: 1, perNamespace: 1,
		arrivals: []string{"a/1", "a/2", "a/3", "b/1", "b/2", "b/3", "c/1", "c/2", "c/3"},
		want:     []string{"a/1", "b/1", "c/1", "a/2", "b/2", "c/2", "a/3", "b/3", "c/3"},
	}, {
		perHost: 2, perNamespace: 1,
		arrivals: []string{"a/1", "a/2", "a/3", "b/1", "b/2", "b/3", "c/1", "c/2", "c/3"},
		want:     []string{"a/1", "b/1", "c/1", "a/2", "b/2", "c/2", "a/3", "b/3", "c/3"},
	}, {
		// c arrives while a and b take turns: it goes next, then the rotation.
		perHost: 1, perNamespace: 1,
		arrivals: []string{"a/1", "a/2", "a/3", "b/1", "b/2", "c/1"},
		want:     []string{"a/1", "b/1", "c/1", "a/2", "b/2", "a/3"},
	}, {
		// a took two lanes while alone; then turns alternate, from the
		// namespace served longest ago.
		perHost: 3, perNamespace: 2,
		arrivals: []string{"a/1", "a/2", "a/3", "a/4", "b/1", "b/2"},
		want:     []string{"a/1", "a/2", "b/1", "a/3", "b/2", "a/4"},
	}} {
		s := newSim(t, c.perHost, c.perNamespace)
		for _, a := range c.arrivals {
			ns, n, _ := strings.Cut(a, "/")
			s.arrive(own(ns, n))
		}
		for {
			before := len(s.order)
			if !s.tick() {
				break
			}
			if len(s.order) > before+1 {
				t.Errorf("one Release started %v", s.order[before:])
			}
		}
		if !slices.Equal(s.order, c.want) {
			t.Errorf("N=%d M=%d %v: started %v, want %v", c.perHost, c.perNamespace, c.arrivals, s.order, c.want)
		}
	}
}

// TestReleaseWakesNext: a Release wakes exactly the owner whose turn came,
// and only it; a Release that frees no turn wakes nobody.
func TestReleaseWakesNext(t *testing.T) {
	w := &wakes{}
	g := lanes.New(1, 1, lanes.WithWake(w.wake))
	a1, a2, b1 := own("a", "1"), own("a", "2"), own("b", "1")
	mustGrant(t, g, a1, "seed", 1)
	mustWait(t, g, a2, "seed", 1, 1)
	mustWait(t, g, b1, "seed", 1, 1)
	if got := w.take(); len(got) != 0 {
		t.Fatalf("woke %v before any Release", names(got))
	}
	g.Release(a1, "seed")
	if got := names(w.take()); !slices.Equal(got, []string{"b/1"}) {
		t.Fatalf("Release woke %v, want [b/1]", got)
	}
	g.Release(a1, "seed") // again: a no-op
	if got := w.take(); len(got) != 0 {
		t.Fatalf("a second Release woke %v", names(got))
	}
	mustGrant(t, g, b1, "seed", 1)
	g.Release(b1, "seed")
	if got := names(w.take()); !slices.Equal(got, []string{"a/2"}) {
		t.Fatalf("Release woke %v, want [a/2]", got)
	}
}

// TestNoJumpingBack: a namespace that ends its step and asks again keeps its
// place in the rotation: it does not go again before a namespace waiting
// since its last turn (a k-lane request held back by the host), however often
// it comes back.
func TestNoJumpingBack(t *testing.T) {
	g := lanes.New(3, 3)
	mustGrant(t, g, own("a", "0"), "seed", 1)
	mustGrant(t, g, own("z", "0"), "seed", 1)
	mustWait(t, g, own("a", "multi"), "seed", 2, 1)
	mustGrant(t, g, own("x", "0"), "seed", 1) // never served: before a, served once
	for i := range 3 {
		g.Release(own("x", fmt.Sprint(i)), "seed")
		mustWait(t, g, own("x", fmt.Sprint(i+1)), "seed", 1, 1)
	}
	g.Release(own("a", "0"), "seed")
	mustGrant(t, g, own("a", "multi"), "seed", 2)
}
