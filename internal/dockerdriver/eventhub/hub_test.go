package eventhub_test

import (
	"context"
	"errors"
	"runtime"
	"testing"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/eventhub"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

func TestFanOutThreeSubscribersOneStream(t *testing.T) {
	e := newEnv(t)
	subs := []<-chan dd.Event{
		e.hub.Subscribe(e.ctx, "reconciler", 16),
		e.hub.Subscribe(e.ctx, "sweep", 16),
		e.hub.Subscribe(e.ctx, "owners", 16),
	}
	e.start()
	a, b := e.create(), e.create()
	for _, ch := range subs {
		expectCreated(t, ch, a)
		expectCreated(t, ch, b)
	}
	if n := e.f.Calls(fake.VerbEvents); n != 1 {
		t.Fatalf("driver Events called %d times, want 1", n)
	}
}

func TestSubscribeBeforeStartGetsNoSignal(t *testing.T) {
	e := newEnv(t)
	ch := e.hub.Subscribe(e.ctx, "early", 4)
	e.start()
	expectCreated(t, ch, e.create())
}

func TestStopClosesAllAndStartAgain(t *testing.T) {
	baseline := runtime.NumGoroutine()
	ctx := context.Background()
	f := fake.New()
	f.AddImage(image, fake.Image{})
	e := &env{t: t, ctx: ctx, f: f, hub: eventhub.New(f)}
	reading := e.hub.Subscribe(ctx, "reading", 4)
	stalled := e.hub.Subscribe(ctx, "stalled", 4)
	e.start()
	if err := e.hub.Start(ctx); !errors.Is(err, eventhub.ErrStarted) {
		t.Fatalf("second Start: %v, want ErrStarted", err)
	}
	expectCreated(t, reading, e.create())

	e.hub.Stop()
	// Stop returns once every channel is closed, a stalled one's too.
	expectClosedNow(t, reading)
	expectClosedNow(t, stalled)
	expectClosedNow(t, e.hub.Subscribe(ctx, "late", 4))
	e.hub.Stop()

	e.start()
	again := e.hub.Subscribe(ctx, "again", 4)
	expectCreated(t, again, e.create())
	if n := f.Calls(fake.VerbEvents); n != 2 {
		t.Fatalf("driver Events called %d times, want 2 (one per Start)", n)
	}
	e.hub.Stop()
	expectClosedNow(t, again)
	waitGoroutines(t, baseline)
}

func TestStartContextEndStopsHub(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(e.ctx)
	ch := e.hub.Subscribe(e.ctx, "sub", 4)
	if err := e.hub.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	expectClosed(t, ch)
	// The hub stopped by itself (the session ends before channels close).
	expectClosedNow(t, e.hub.Subscribe(e.ctx, "probe", 1))
	if err := e.hub.Start(ctx); err == nil {
		t.Fatal("Start with an ended ctx succeeded")
	}
	e.start()
	again := e.hub.Subscribe(e.ctx, "again", 4)
	expectCreated(t, again, e.create())
}

func TestSubscriberContextEndClosesOnlyItsChannel(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(e.ctx)
	leaving := e.hub.Subscribe(ctx, "leaving", 4)
	staying := e.hub.Subscribe(e.ctx, "staying", 4)
	e.start()
	cancel()
	expectClosed(t, leaving)
	waitFor(t, "the subscriber gone", func() bool { return e.stats("leaving").Subscribers == 0 })
	expectCreated(t, staying, e.create())
	if st := e.stats("staying"); st.Subscribers != 1 {
		t.Fatalf("staying: %+v", st)
	}
}
