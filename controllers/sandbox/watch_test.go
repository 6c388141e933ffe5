package sandbox

import (
	"context"
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// The watch re-queues a Sandbox for what happens to its containers, never for what
// the manager itself did to them.
func TestOwnActionsTellOursFromOthers(t *testing.T) {
	ctx := context.Background()
	f := fake.New()
	f.AddImage("redis:8-alpine", fake.Image{})
	own := newOwnActions()
	d := own.wrap(f)
	spec := func(name string) dd.ContainerSpec {
		return dd.ContainerSpec{Name: name, Image: "redis:8-alpine", OwnerLabel: host.LabelUID, Labels: map[string]string{host.LabelUID: "u1"}}
	}
	c, err := d.CreateContainer(ctx, spec("made"))
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := f.SeedContainer(dd.ContainerSpec{Name: "taken", Image: "redis:8-alpine"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.CreateContainer(ctx, spec("taken")); err == nil {
		t.Fatal("a taken name was created")
	}
	clear := f.Inject(fake.Fault{Verb: fake.VerbCreateContainer, AtStart: true, Err: errString("OCI runtime create failed")})
	if _, err := d.CreateContainer(ctx, spec("unstartable")); err == nil {
		t.Fatal("a start fault did not fail")
	}
	clear()

	ev := func(typ dd.EventType, id, name string) dd.Event { return dd.Event{Type: typ, ID: id, Name: name} }
	steps := []struct {
		what string
		ev   dd.Event
		ours bool
	}{
		{"our create", ev(dd.EventCreate, c.ID, "made"), true},
		{"a crash", ev(dd.EventDie, c.ID, "made"), false},
		{"the destroy of a container whose start failed", ev(dd.EventDestroy, "gone", "unstartable"), true},
		{"the destroy of a foreign container holding a name we wanted", ev(dd.EventDestroy, foreign.ID, "taken"), false},
		{"a docker rm -f of ours", ev(dd.EventDestroy, c.ID, "made"), false},
	}
	for _, s := range steps {
		if got := own.caused(s.ev); got != s.ours {
			t.Errorf("%s: caused = %v, want %v", s.what, got, s.ours)
		}
	}
	if err := d.Remove(ctx, c.ID, time.Second); err != nil {
		t.Fatal(err)
	}
	for _, typ := range []dd.EventType{dd.EventDie, dd.EventDestroy} {
		if !own.caused(ev(typ, c.ID, "made")) {
			t.Errorf("%s after our removal: not ours", typ)
		}
	}
	if own.caused(ev(dd.EventDestroy, c.ID, "made")) {
		t.Error("a destroy is expected once per removal")
	}
}

type errString string

func (e errString) Error() string { return string(e) }
