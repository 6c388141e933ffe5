package lanes_test

import (
	"slices"
	"testing"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/lanes"
)

const forget = time.Minute

func staleGate(c *clock, w *wakes) *lanes.Gate {
	return lanes.New(1, 1, lanes.WithClock(c.Now), lanes.WithForgetAfter(forget), lanes.WithWake(w.wake))
}

// TestForgetWaiter: a waiter that stops asking (its object deleted without a
// Release) keeps its place for the forget period, then is forgotten and
// blocks nobody; one that asks again later queues at the back. A granted step
// that does not ask is never forgotten.
func TestForgetWaiter(t *testing.T) {
	c, w := newClock(), &wakes{}
	g := staleGate(c, w)
	a1, b1, b2 := own("a", "1"), own("b", "1"), own("b", "2")
	mustGrant(t, g, a1, "seed", 1)
	mustWait(t, g, b1, "seed", 1, 1)
	mustWait(t, g, b2, "seed", 1, 2)
	var forgotten time.Duration
	for at := 10 * time.Second; at <= 3*forget; at += 10 * time.Second {
		c.Advance(10 * time.Second)
		if tk := g.Acquire(b2, "seed", 1); tk.Position == 1 && forgotten == 0 {
			forgotten = at
		}
	}
	if forgotten <= forget || forgotten > forget*5/4+10*time.Second {
		t.Fatalf("the stale waiter was forgotten after %s, want after %s and by %s", forgotten, forget, forget*5/4)
	}
	mustBusy(t, g, 1, 1) // a1's step runs on: never forgotten
	g.Release(a1, "seed")
	if got := names(w.take()); !slices.Equal(got, []string{"b/2"}) {
		t.Fatalf("Release woke %v, want [b/2]", got)
	}
	mustGrant(t, g, b2, "seed", 1)
	mustWait(t, g, b1, "seed", 1, 1) // back, after what it missed
}

// TestKeepWaiter: a waiter that keeps asking keeps its place however long it
// waits.
func TestKeepWaiter(t *testing.T) {
	c, w := newClock(), &wakes{}
	g := staleGate(c, w)
	mustGrant(t, g, own("a", "1"), "seed", 1)
	mustWait(t, g, own("b", "1"), "seed", 1, 1)
	mustWait(t, g, own("b", "2"), "seed", 1, 2)
	for range 200 {
		c.Advance(forget / 2)
		mustWait(t, g, own("b", "1"), "seed", 1, 1)
		mustWait(t, g, own("b", "2"), "seed", 1, 2)
	}
}

// TestForgetOffer: lanes granted to an owner that never comes to take them
// are withdrawn after the forget period and go to the next waiter.
func TestForgetOffer(t *testing.T) {
	c, w := newClock(), &wakes{}
	g := staleGate(c, w)
	a1, b1, c1 := own("a", "1"), own("b", "1"), own("c", "1")
	mustGrant(t, g, a1, "seed", 1)
	mustWait(t, g, b1, "seed", 1, 1)
	mustWait(t, g, c1, "seed", 1, 1)
	g.Release(a1, "seed")
	if got := names(w.take()); !slices.Equal(got, []string{"b/1"}) {
		t.Fatalf("Release woke %v, want [b/1]", got)
	}
	// b/1 was deleted: it never asks again. c/1 asks on its passes.
	var granted time.Duration
	for at := 10 * time.Second; at <= 3*forget && granted == 0; at += 10 * time.Second {
		c.Advance(10 * time.Second)
		if g.Acquire(c1, "seed", 1).Granted {
			granted = at
		}
	}
	if granted <= forget || granted > forget*5/4+10*time.Second {
		t.Fatalf("the untaken lane went to the next after %s, want after %s and by %s", granted, forget, forget*5/4)
	}
	mustBusy(t, g, 1, 0)
}

// TestForgetOfferWakes: a lane withdrawn in another owner's call wakes the
// waiter it goes to.
func TestForgetOfferWakes(t *testing.T) {
	c, w := newClock(), &wakes{}
	g := staleGate(c, w)
	mustGrant(t, g, own("a", "1"), "seed", 1)
	mustWait(t, g, own("b", "1"), "seed", 1, 1)
	mustWait(t, g, own("c", "1"), "seed", 1, 1)
	mustWait(t, g, own("c", "2"), "seed", 1, 2)
	g.Release(own("a", "1"), "seed") // offered to b/1, which never comes
	if got := names(w.take()); !slices.Equal(got, []string{"b/1"}) {
		t.Fatalf("Release woke %v, want [b/1]", got)
	}
	var woken []string
	for range 4 { // c/1 and c/2 ask on their passes, c/2 first
		c.Advance(forget / 2)
		g.Acquire(own("c", "2"), "seed", 1)
		woken = append(woken, names(w.take())...)
		g.Acquire(own("c", "1"), "seed", 1)
	}
	if !slices.Equal(woken, []string{"c/1"}) {
		t.Fatalf("c/2's passes woke %v, want [c/1] once", woken)
	}
	mustGrant(t, g, own("c", "1"), "seed", 1)
	mustWait(t, g, own("c", "2"), "seed", 1, 1)
}
