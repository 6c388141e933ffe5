package lanes_test

import (
	"strings"
	"testing"

	"github.com/roboco-sandbox/sandbox-controller/internal/lanes"
)

// TestAllOrNone: a request for k lanes is granted all at once or not at all,
// keeps its turn until k are free (a later request of one does not overtake
// it), and one larger than a cap runs alone under that cap.
func TestAllOrNone(t *testing.T) {
	for _, c := range []struct {
		name                  string
		perHost, perNamespace int
		busy                  int // lanes of namespace "z" taken first, one each
		k                     int
		granted               bool
		wantBusy              int
	}{
		{"fits", 4, 4, 1, 3, true, 4},
		{"one short", 4, 4, 2, 3, false, 2},
		{"host full", 4, 4, 4, 1, false, 4},
		{"past the host cap, alone", 4, 4, 0, 6, true, 6},
		{"past the host cap, not alone", 4, 4, 1, 6, false, 1},
		{"past the namespace cap, alone", 4, 2, 0, 3, true, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := lanes.New(c.perHost, c.perNamespace)
			for i := range c.busy {
				mustGrant(t, g, own("z", name("z", i)), "seed", 1)
			}
			tk := g.Acquire(own("a", "multi"), "seed", c.k)
			if tk.Granted != c.granted || tk.Asked != c.k {
				t.Fatalf("got %+v, want granted %v for %d lanes", tk, c.granted, c.k)
			}
			if s := g.Snapshot(); s.Busy != c.wantBusy {
				t.Fatalf("%d lanes busy, want %d: a refused request takes none", s.Busy, c.wantBusy)
			}
			if c.granted {
				return
			}
			// A later one-lane request in another namespace waits behind it.
			mustWait(t, g, own("b", "single"), "seed", 1, 1)
			for i := range c.busy {
				g.Release(own("z", name("z", i)), "seed")
			}
			mustGrant(t, g, own("a", "multi"), "seed", c.k)
		})
	}
}

// TestAllOrNoneNamespace: a k-lane request waits for k lanes of its
// namespace while other namespaces go on.
func TestAllOrNoneNamespace(t *testing.T) {
	g := lanes.New(4, 2)
	mustGrant(t, g, own("a", "1"), "seed", 1)
	mustWait(t, g, own("a", "multi"), "seed", 2, 1)
	mustGrant(t, g, own("b", "1"), "seed", 1) // a's namespace is full, not the host
	mustBusy(t, g, 2, 1)
	g.Release(own("a", "1"), "seed")
	mustGrant(t, g, own("a", "multi"), "seed", 2)
	mustBusy(t, g, 3, 0)
}

// TestIdempotent: asking again keeps a waiter's place and a grant's lanes;
// a waiter's n follows its last ask.
func TestIdempotent(t *testing.T) {
	g := lanes.New(1, 1)
	mustGrant(t, g, own("a", "1"), "seed", 1)
	mustGrant(t, g, own("a", "1"), "seed", 3) // granted stays granted, on its one lane
	mustWait(t, g, own("a", "2"), "seed", 1, 1)
	mustWait(t, g, own("a", "3"), "seed", 1, 2)
	for range 3 {
		mustWait(t, g, own("a", "2"), "seed", 1, 1)
		mustWait(t, g, own("a", "3"), "seed", 2, 2)
	}
	mustWait(t, g, own("a", "3"), "other", 1, 3) // another key of the same owner
	mustBusy(t, g, 1, 3)
	if tk := g.Acquire(own("a", "3"), "seed", 2); tk.Asked != 2 {
		t.Fatalf("a waiter asked for %d lanes, want 2", tk.Asked)
	}
	// A recreated object (another UID) is another owner.
	o := own("a", "1")
	o.UID = "new"
	mustWait(t, g, o, "seed", 1, 4)
}

// TestHold: a step found running counts whatever the caps, is never refused,
// and holds back new grants until the lanes are under the caps again.
func TestHold(t *testing.T) {
	g := lanes.New(2, 1)
	for i := range 3 {
		g.Hold(own("a", name("a", i)), "seed", 1)
	}
	g.Hold(own("a", "a00"), "seed", 1) // again: counted once
	mustBusy(t, g, 3, 0)
	mustGrant(t, g, own("a", "a01"), "seed", 1) // a held step is granted
	mustWait(t, g, own("b", "1"), "seed", 1, 1)
	g.Release(own("a", "a00"), "seed")
	mustWait(t, g, own("b", "1"), "seed", 1, 1) // 2 of 2 still busy
	g.Release(own("a", "a01"), "seed")
	mustGrant(t, g, own("b", "1"), "seed", 1)
	mustWait(t, g, own("a", "new"), "seed", 1, 1) // a's held step keeps its namespace full
	mustBusy(t, g, 2, 1)
}

// TestHoldWaiter: a waiter whose step is found running leaves its queue and
// counts, past the caps.
func TestHoldWaiter(t *testing.T) {
	g := lanes.New(1, 1)
	mustGrant(t, g, own("a", "1"), "seed", 1)
	mustWait(t, g, own("a", "2"), "seed", 1, 1)
	mustWait(t, g, own("a", "3"), "seed", 1, 2)
	g.Hold(own("a", "2"), "seed", 2)
	mustBusy(t, g, 3, 1)
	mustGrant(t, g, own("a", "2"), "seed", 2)
	mustWait(t, g, own("a", "3"), "seed", 1, 1)
}

// TestReleaseOwner: an owner's deletion gives back all its steps, granted or
// waiting, and the next waiters go.
func TestReleaseOwner(t *testing.T) {
	w := &wakes{}
	g := lanes.New(2, 2, lanes.WithWake(w.wake))
	a := own("a", "1")
	mustGrant(t, g, a, "postgres", 1)
	mustGrant(t, g, a, "redis", 1)
	mustWait(t, g, a, "mongo", 1, 1)
	mustWait(t, g, own("b", "1"), "seed", 2, 1)
	g.ReleaseOwner(a)
	if got := names(w.take()); len(got) != 1 || got[0] != "b/1" {
		t.Fatalf("woke %v, want [b/1]", got)
	}
	mustBusy(t, g, 2, 0)
	mustWait(t, g, a, "postgres", 1, 1) // asked again: a new waiter
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		perHost, perNamespace int
		want                  string
	}{
		{4, 2, ""}, {1, 1, ""}, {4, 4, ""},
		{0, 1, "--seed-lanes must be at least 1"},
		{4, 0, "--seed-lanes-per-namespace must be between 1 and --seed-lanes (4), not 0"},
		{2, 3, "--seed-lanes-per-namespace must be between 1 and --seed-lanes (2), not 3"},
	} {
		err := lanes.Validate(c.perHost, c.perNamespace)
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%d, %d) = %v, want %q", c.perHost, c.perNamespace, err, c.want)
		}
	}
	if err := lanes.Validate(lanes.DefaultPerHost, lanes.DefaultPerNamespace); err != nil {
		t.Errorf("the defaults: %v", err)
	}
}

// TestNewClamps: caps Validate refuses still make a gate that admits.
func TestNewClamps(t *testing.T) {
	g := lanes.New(0, 5)
	if s := g.Snapshot(); s.PerHost != 1 || s.PerNamespace != 1 {
		t.Fatalf("New(0, 5): %+v, want 1, 1", s)
	}
	mustGrant(t, g, own("a", "1"), "seed", 1)
	mustWait(t, g, own("b", "1"), "seed", 1, 1)
}

func TestTicketString(t *testing.T) {
	g := lanes.New(4, 2)
	mustGrant(t, g, own("a", "1"), "seed", 0) // below 1 counts as 1
	mustGrant(t, g, own("a", "2"), "seed", 1)
	g.Hold(own("h", "1"), "seed", 3)
	for i := 3; i <= 13; i++ {
		g.Acquire(own("a", name("w", i)), "seed", 1)
	}
	for _, c := range []struct {
		o    lanes.Owner
		n    int
		want string
	}{
		{own("a", "1"), 1, "a seed lane granted; 5 of 4 host lanes busy"},
		{own("a", "w03"), 1, "waiting for a seed lane: 1st in namespace a's queue; 5 of 4 host lanes busy, 2 of 2 of namespace a"},
		{own("a", "w04"), 1, "waiting for a seed lane: 2nd in namespace a's queue; "},
		{own("a", "w05"), 1, ": 3rd in"},
		{own("a", "w06"), 1, ": 4th in"},
		{own("a", "w13"), 1, ": 11th in"},
		{own("b", "1"), 3, "waiting for 3 seed lanes: 1st in namespace b's queue; 5 of 4 host lanes busy"},
	} {
		got := g.Acquire(c.o, "seed", c.n).String()
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q in it", c.o.Name, got, c.want)
		}
		if c.o.Namespace == "b" && strings.Contains(got, "of namespace") {
			t.Errorf("%q names a namespace cap that does not hold it back", got)
		}
	}
}

// TestFleet: one gate per host, made once; an owner's deletion reaches all.
func TestFleet(t *testing.T) {
	f := lanes.NewFleet(1, 1)
	h1 := f.Host("h1")
	if f.Host("h1") != h1 || f.Host("h2") == h1 {
		t.Fatal("want one gate per host name")
	}
	a := own("a", "1")
	mustGrant(t, f.Host("h1"), a, "seed", 1)
	mustGrant(t, f.Host("h2"), a, "seed", 1) // another host, its own lanes
	mustWait(t, f.Host("h1"), own("b", "1"), "seed", 1, 1)
	f.ReleaseOwner(a)
	mustBusy(t, f.Host("h1"), 1, 0)
	mustBusy(t, f.Host("h2"), 0, 0)
}
