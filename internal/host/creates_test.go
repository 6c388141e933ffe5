package host_test

import (
	"context"
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// heldHost is a host whose image is present and whose waiters are collected.
func heldHost(t *testing.T) (*host.Host, *fake.Driver, *notified) {
	t.Helper()
	f := fake.New(fake.WithCallTimeout(time.Hour))
	f.AddNetwork("sbx")
	f.AddImage("postgres:16-alpine", fake.Image{})
	n := newNotified()
	return host.New(f, time.Second, host.NewPulls(f, n.notify, nil)), f, n
}

func TestEnsureFastCreateEndsInline(t *testing.T) {
	h, f, n := heldHost(t)
	svc := service(256 << 20)
	got, err := h.Ensure(context.Background(), svc, 0, "ns/a")
	if err != nil || got.Creating != 0 || got.Container.State != dd.StateRunning {
		t.Fatalf("a fast create: got %+v, %v; want it running, inline", got, err)
	}
	if h.CreatePending(svc) {
		t.Fatal("a create taken inline is still pending")
	}
	select {
	case w := <-n.ch:
		t.Fatalf("a create that ended inline told %q", w)
	case <-time.After(50 * time.Millisecond):
	}
	if c := f.Calls(fake.VerbCreateContainer); c != 1 {
		t.Fatalf("%d creates, want 1", c)
	}
}

func TestEnsureHeldCreateGoesOnBesideAndTellsItsWaiter(t *testing.T) {
	h, f, n := heldHost(t)
	svc := service(256 << 20)
	f.Inject(fake.Fault{Verb: fake.VerbCreateContainer, Delay: 3 * time.Second})
	got, err := h.Ensure(context.Background(), svc, 0, "ns/a")
	if err != nil || got.Creating == 0 {
		t.Fatalf("a held create: got %+v, %v; want Creating", got, err)
	}
	if !h.CreatePending(svc) {
		t.Fatal("a create under way is not pending")
	}
	if got, _ := h.Ensure(context.Background(), svc, 0, "ns/a"); got.Creating == 0 && got.Container.ID == "" {
		t.Fatalf("a second Ensure neither joined nor took the create: %+v", got)
	}
	if w := n.wait(t); w != "ns/a" {
		t.Fatalf("told %q, want ns/a", w)
	}
	got, err = h.Ensure(context.Background(), svc, 0, "ns/a")
	if err != nil || got.Creating != 0 || got.Container.State != dd.StateRunning {
		t.Fatalf("after the create ended: got %+v, %v; want its container", got, err)
	}
	if c := f.Calls(fake.VerbCreateContainer); c != 1 {
		t.Fatalf("%d creates, want 1 (joined, not made again)", c)
	}
}

func TestCancelCreatesLeavesNothing(t *testing.T) {
	h, f, n := heldHost(t)
	svc := service(256 << 20)
	f.Inject(fake.Fault{Verb: fake.VerbCreateContainer, Delay: time.Hour})
	if got, _ := h.Ensure(context.Background(), svc, 0, "ns/a"); got.Creating == 0 {
		t.Fatalf("got %+v, want Creating", got)
	}
	if c := h.CancelCreates("other-uid"); c != 0 {
		t.Fatalf("cancelled %d creates of another owner", c)
	}
	if c := h.CancelCreates("uid-1"); c != 1 {
		t.Fatalf("cancelled %d creates, want 1", c)
	}
	n.wait(t)
	if c := h.CancelCreates("uid-1"); c != 0 {
		t.Fatalf("%d creates still under way after their end", c)
	}
	if cs, _ := f.List(context.Background(), map[string]string{host.LabelUID: "uid-1"}); len(cs) != 0 {
		t.Fatalf("a cancelled create left %v", cs)
	}
}

func TestMemberCreatesCountsAndTakesFailures(t *testing.T) {
	h, f, n := heldHost(t)
	svc := service(256 << 20)
	svc.Container.Name = host.MemberPrefix + "pool1234-aa"
	f.Inject(fake.Fault{Verb: fake.VerbCreateContainer, Delay: 3 * time.Second, Err: dd.ErrUnavailable})
	if got, _ := h.Ensure(context.Background(), svc, 0, host.PoolWaiterPrefix+"ns/p"); got.Creating == 0 {
		t.Fatalf("got %+v, want Creating", got)
	}
	if under, failed := h.MemberCreates(host.MemberPrefix + "pool1234-"); len(under) != 1 || len(failed) != 0 {
		t.Fatalf("under way %v, failed %v; want one under way", under, failed)
	}
	n.wait(t)
	under, failed := h.MemberCreates(host.MemberPrefix + "pool1234-")
	if len(under) != 0 || len(failed) != 1 {
		t.Fatalf("under way %v, failed %v; want one failure", under, failed)
	}
	if _, failed := h.MemberCreates(host.MemberPrefix + "pool1234-"); len(failed) != 0 {
		t.Fatalf("a failure was taken twice: %v", failed)
	}
}
