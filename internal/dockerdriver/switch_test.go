package dockerdriver_test

import (
	"context"
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// nextEvent is the next event on ch of a type other than the skipped ones.
func nextEvent(t *testing.T, ch <-chan dd.Event, skip ...dd.EventType) dd.Event {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatal("the stream ended")
			}
			skipped := false
			for _, s := range skip {
				skipped = skipped || ev.Type == s
			}
			if !skipped {
				return ev
			}
		case <-deadline:
			t.Fatal("no event within 10s")
		}
	}
}

// A re-dialled host's stream follows the new driver: the old daemon's events
// stop, the break is announced (lost, then resync, so consumers re-list and prove
// the host again), and the new daemon's events arrive.
func TestSwitchEventsFollowTheSwap(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := fake.New(), fake.New()
	sw := dd.NewSwitch(a)
	events := sw.Events(ctx, dd.EventFilter{})

	if _, err := a.SeedContainer(dd.ContainerSpec{Name: "on-a", Image: "x"}, false); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, events); ev.Name != "on-a" {
		t.Fatalf("before the swap: %+v, want on-a's create", ev)
	}

	sw.Swap(b)
	if ev := nextEvent(t, events); ev.Type != dd.EventLost {
		t.Fatalf("after the swap: %+v, want lost", ev)
	}
	if ev := nextEvent(t, events); ev.Type != dd.EventResync {
		t.Fatalf("after lost: %+v, want resync", ev)
	}
	if _, err := a.SeedContainer(dd.ContainerSpec{Name: "on-a-later", Image: "x"}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := b.SeedContainer(dd.ContainerSpec{Name: "on-b", Image: "x"}, false); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, events); ev.Name != "on-b" {
		t.Fatalf("after the swap: %+v, want on-b's create (the old daemon's stream ended)", ev)
	}
}
