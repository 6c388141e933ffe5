package eventhub_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/eventhub"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// guard only bounds a wait that should succeed: no assertion rests on timing.
const guard = 10 * time.Second

const image = "busybox:latest"

type env struct {
	t   *testing.T
	ctx context.Context
	f   *fake.Driver
	hub *eventhub.Hub
	n   int
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f := fake.New()
	f.AddImage(image, fake.Image{})
	e := &env{t: t, ctx: ctx, f: f, hub: eventhub.New(f)}
	t.Cleanup(func() { cancel(); e.hub.Stop() })
	return e
}

func (e *env) start() {
	e.t.Helper()
	if err := e.hub.Start(e.ctx); err != nil {
		e.t.Fatalf("Start: %v", err)
	}
}

// create makes a container, which emits create then start, and returns its name.
func (e *env) create() string {
	e.t.Helper()
	e.n++
	name := fmt.Sprintf("c%d", e.n)
	_, err := e.f.CreateContainer(e.ctx, dd.ContainerSpec{
		Name: name, Image: image, Labels: map[string]string{"owner": name}, OwnerLabel: "owner",
	})
	if err != nil {
		e.t.Fatalf("CreateContainer %s: %v", name, err)
	}
	return name
}

func (e *env) stats(name string) eventhub.Stats {
	for _, st := range e.hub.Stats() {
		if st.Name == name {
			return st
		}
	}
	return eventhub.Stats{Name: name}
}

func recv(t *testing.T, ch <-chan dd.Event) dd.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("channel closed, want an event")
		}
		return ev
	case <-time.After(guard):
		t.Fatal("no event")
	}
	return dd.Event{}
}

// expect receives one event of type typ (about container name, unless "").
func expect(t *testing.T, ch <-chan dd.Event, typ dd.EventType, name string) {
	t.Helper()
	if ev := recv(t, ch); ev.Type != typ || ev.Name != name {
		t.Fatalf("got %s %q, want %s %q", ev.Type, ev.Name, typ, name)
	}
}

// expectCreated receives the create and start events of container name.
func expectCreated(t *testing.T, ch <-chan dd.Event, name string) {
	t.Helper()
	expect(t, ch, dd.EventCreate, name)
	expect(t, ch, dd.EventStart, name)
}

// expectNothing checks that nothing is ready on ch; only call it when the
// hub has provably handed over all it had (Stats Pending 0).
func expectNothing(t *testing.T, ch <-chan dd.Event) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		t.Fatalf("got %s %q (open %v), want nothing", ev.Type, ev.Name, ok)
	default:
	}
}

// expectClosedNow checks that ch is closed already.
func expectClosedNow(t *testing.T, ch <-chan dd.Event) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("got %s %q, want a closed channel", ev.Type, ev.Name)
		}
	default:
		t.Fatal("channel still open")
	}
}

// expectClosed waits for ch to close, ignoring events still delivered.
func expectClosed(t *testing.T, ch <-chan dd.Event) {
	t.Helper()
	timeout := time.After(guard)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatal("channel not closed")
		}
	}
}

// waitFor polls cond until it holds: a wait for a state, never an assertion on time.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func waitGoroutines(t *testing.T, baseline int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("goroutines back to %d", baseline), func() bool {
		return runtime.NumGoroutine() <= baseline
	})
}
