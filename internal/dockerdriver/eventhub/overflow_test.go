package eventhub_test

import (
	"testing"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// readUntilResync reads a behind subscriber: the real events it still gets,
// then exactly one Lost, then a Resync.
func readUntilResync(t *testing.T, ch <-chan dd.Event) []dd.Event {
	t.Helper()
	var real []dd.Event
	for ev := recv(t, ch); ev.Type != dd.EventLost; ev = recv(t, ch) {
		if ev.Type == dd.EventResync {
			t.Fatal("Resync before Lost")
		}
		real = append(real, ev)
	}
	expect(t, ch, dd.EventResync, "")
	return real
}

func TestStalledSubscriberDoesNotDelayOthers(t *testing.T) {
	e := newEnv(t)
	stalled := e.hub.Subscribe(e.ctx, "stalled", 2)
	live := e.hub.Subscribe(e.ctx, "live", 8)
	e.start()
	const n = 50
	for range n {
		// live gets every event, in order, and never a Lost.
		expectCreated(t, live, e.create())
	}
	// live got the last event, so the hub has offered every one to stalled too.
	st := e.stats("stalled")
	if st.Overflows != 1 || st.Behind != 1 || st.Pending > 4 {
		t.Fatalf("stalled: %+v, want one overflow, behind, at most 2 events + 1 in hand-over + Lost pending", st)
	}
	got := readUntilResync(t, stalled)
	if len(got) > 3 || uint64(len(got))+st.Dropped != 2*n {
		t.Fatalf("stalled got %d events and dropped %d, want at most 3 and %d in all", len(got), st.Dropped, 2*n)
	}
	// Caught up: events flow again, with no further signal.
	expectCreated(t, stalled, e.create())
	if st := e.stats("live"); st.Dropped != 0 || st.Overflows != 0 {
		t.Fatalf("live: %+v", st)
	}
}

func TestOverflowLostAfterBacklogThenResync(t *testing.T) {
	e := newEnv(t)
	slow := e.hub.Subscribe(e.ctx, "slow", 2)
	ref := e.hub.Subscribe(e.ctx, "ref", 16)
	e.start()
	var emitted []string // type/name of each event, in order
	for range 3 {
		name := e.create()
		expectCreated(t, ref, name)
		emitted = append(emitted, "create/"+name, "start/"+name)
	}
	got := readUntilResync(t, slow)
	// What it got is what came first, in order: the Lost is where the gap begins.
	if len(got) == 0 || len(got) > 3 {
		t.Fatalf("slow got %d events before Lost, want 1 to 3 (buffer 2 + 1 in hand-over)", len(got))
	}
	for i, ev := range got {
		if s := string(ev.Type) + "/" + ev.Name; s != emitted[i] {
			t.Fatalf("event %d: %s, want %s", i, s, emitted[i])
		}
	}
	if st := e.stats("slow"); st.Dropped != uint64(len(emitted)-len(got)) {
		t.Fatalf("slow: %+v, want %d dropped", st, len(emitted)-len(got))
	}
	waitFor(t, "slow drained", func() bool { return e.stats("slow").Pending == 0 })
	if st := e.stats("slow"); st.Behind != 0 {
		t.Fatalf("slow after Resync: %+v", st)
	}
	expectNothing(t, slow)
	expectCreated(t, slow, e.create())
}

func TestDriverOutageForwardedOnce(t *testing.T) {
	e := newEnv(t)
	live := e.hub.Subscribe(e.ctx, "live", 16)
	slow := e.hub.Subscribe(e.ctx, "slow", 2)
	e.start()
	// slow (2 events + 1 in hand-over) overflows on these four.
	expectCreated(t, live, e.create())
	expectCreated(t, live, e.create())
	e.f.DropEvents()
	expect(t, live, dd.EventLost, "")
	if st := e.stats("slow"); st.Overflows != 1 || st.Behind != 1 {
		t.Fatalf("slow: %+v", st)
	}

	// slow drains its backlog while the daemon is away: its Lost, no Resync yet.
	for recv(t, slow).Type != dd.EventLost {
	}
	waitFor(t, "slow drained", func() bool { return e.stats("slow").Pending == 0 })
	if st := e.stats("slow"); st.Behind != 1 {
		t.Fatalf("slow resynced while the stream is broken: %+v", st)
	}
	expectNothing(t, slow)
	e.create() // lost by the driver

	e.f.RestoreEvents()
	expect(t, live, dd.EventResync, "")
	expect(t, slow, dd.EventResync, "")
	name := e.create()
	expectCreated(t, live, name)
	expectCreated(t, slow, name)
}

func TestFlappingDaemonKeepsStalledQueueBounded(t *testing.T) {
	e := newEnv(t)
	live := e.hub.Subscribe(e.ctx, "live", 4)
	stalled := e.hub.Subscribe(e.ctx, "stalled", 4)
	e.start()
	for range 20 {
		e.f.DropEvents()
		expect(t, live, dd.EventLost, "")
		e.f.RestoreEvents()
		expect(t, live, dd.EventResync, "")
		if st := e.stats("stalled"); st.Pending > 2 {
			t.Fatalf("stalled: %+v, want at most a Lost and a Resync pending", st)
		}
	}
	// One outage as far as stalled can tell.
	expect(t, stalled, dd.EventLost, "")
	expect(t, stalled, dd.EventResync, "")
	waitFor(t, "stalled drained", func() bool { return e.stats("stalled").Pending == 0 })
	expectNothing(t, stalled)
}

func TestSubscriberDuringOutageGetsLostFirst(t *testing.T) {
	e := newEnv(t)
	live := e.hub.Subscribe(e.ctx, "live", 4)
	e.start()
	e.f.DropEvents()
	expect(t, live, dd.EventLost, "")
	late := e.hub.Subscribe(e.ctx, "late", 4)
	expect(t, late, dd.EventLost, "")

	e.f.RestoreEvents()
	expect(t, live, dd.EventResync, "")
	expect(t, late, dd.EventResync, "")
	// On a healthy stream a new subscriber gets events only.
	fresh := e.hub.Subscribe(e.ctx, "fresh", 4)
	name := e.create()
	for _, ch := range []<-chan dd.Event{live, late, fresh} {
		expectCreated(t, ch, name)
	}
}
