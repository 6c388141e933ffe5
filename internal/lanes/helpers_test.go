package lanes_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/lanes"
)

// clock is a fake clock tests move by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// wakes records the owners a gate woke, in order.
type wakes struct {
	mu     sync.Mutex
	owners []lanes.Owner
}

func (w *wakes) wake(o lanes.Owner) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.owners = append(w.owners, o)
}

// take returns the owners woken since the last take.
func (w *wakes) take() []lanes.Owner {
	w.mu.Lock()
	defer w.mu.Unlock()
	o := w.owners
	w.owners = nil
	return o
}

// own is the owner ns/name.
func own(ns, name string) lanes.Owner {
	return lanes.Owner{Namespace: ns, Name: name, UID: "uid-" + ns + "-" + name}
}

// names is each owner's ns/name.
func names(owners []lanes.Owner) []string {
	s := make([]string, len(owners))
	for i, o := range owners {
		s[i] = o.Namespace + "/" + o.Name
	}
	return s
}

// mustWait fails t unless owner's step waits at position.
func mustWait(t *testing.T, g *lanes.Gate, o lanes.Owner, key string, n, position int) {
	t.Helper()
	if tk := g.Acquire(o, key, n); tk.Granted || tk.Position != position {
		t.Fatalf("%s/%s %s: got %+v, want waiting at %d", o.Namespace, o.Name, key, tk, position)
	}
}

// mustGrant fails t unless owner's step is granted.
func mustGrant(t *testing.T, g *lanes.Gate, o lanes.Owner, key string, n int) {
	t.Helper()
	if tk := g.Acquire(o, key, n); !tk.Granted {
		t.Fatalf("%s/%s %s: got %s, want granted", o.Namespace, o.Name, key, tk)
	}
}

// mustBusy fails t unless the gate's host has busy lanes taken and waiting steps.
func mustBusy(t *testing.T, g *lanes.Gate, busy, waiting int) {
	t.Helper()
	if s := g.Snapshot(); s.Busy != busy || s.Waiting != waiting {
		t.Fatalf("got %d busy, %d waiting; want %d, %d (%+v)", s.Busy, s.Waiting, busy, waiting, s)
	}
}

func name(prefix string, i int) string { return fmt.Sprintf("%s%02d", prefix, i) }
