package host_test

import (
	"context"
	"testing"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// offerMember puts a running pool member on the host and offers it.
func offerMember(t *testing.T, h *host.Host, f *fake.Driver, svc host.Service, name string) host.Member {
	t.Helper()
	spec := svc.Container
	spec.Name, spec.Aliases = name, nil
	c, err := f.SeedContainer(spec, true)
	if err != nil {
		t.Fatal(err)
	}
	m := host.Member{ID: c.ID, Name: name, Namespace: "ns", Pool: "pool", PoolUID: "pool-uid", Class: "class",
		Password: "member-pw", Address: "10.0.0.2"}
	h.Offer(context.Background(), "pool-uid", svc.Engine, []host.Member{m})
	return m
}

// A claim runs the rotation its member had prepared when it was offered: it pays
// no exec start of its own. One whose prepared rotation broke before it ran (its
// connection dropped) prepares another and passes all the same.
func TestClaimRunsTheRotationPreparedAhead(t *testing.T) {
	h, f := newHost()
	svc := service(512 << 20)
	svc.Password = "sandbox-pw"
	defer f.OnExec(fake.ExecRule{Result: dd.ExecResult{Stdout: "sandbox-rotated\n"}})()
	ctx := context.Background()

	member := offerMember(t, h, f, svc, "sandboxpool-a")
	if n := f.Calls(fake.VerbPrepareExec); n != 1 {
		t.Fatalf("offering a member prepared %d rotations, want 1", n)
	}
	h.Offer(ctx, "pool-uid", svc.Engine, []host.Member{member})
	if n := f.Calls(fake.VerbPrepareExec); n != 1 {
		t.Fatalf("offering it again prepared %d rotations in all, want still 1", n)
	}
	m, ok := h.Warm().Take("ns", "class", nil)
	if !ok {
		t.Fatal("nothing to take")
	}
	got, err := h.Claim(ctx, svc, m)
	if err != nil || got.Container.Name != svc.Container.Name {
		t.Fatalf("Claim = %+v, %v", got, err)
	}
	if p, x := f.Calls(fake.VerbPrepareExec), f.Calls(fake.VerbExec); p != 1 || x != 1 {
		t.Errorf("the claim prepared %d and ran %d execs in all, want the one prepared ahead, run once", p, x)
	}

	t.Run("broken before it ran", func(t *testing.T) {
		h, f := newHost()
		defer f.OnExec(fake.ExecRule{Result: dd.ExecResult{Stdout: "sandbox-rotated\n"}})()
		member := offerMember(t, h, f, svc, "sandboxpool-b")
		f.BreakHeldExecs(member.ID)
		m, _ := h.Warm().Take("ns", "class", nil)
		if _, err := h.Claim(ctx, svc, m); err != nil {
			t.Fatalf("Claim: %v", err)
		}
		if p := f.Calls(fake.VerbPrepareExec); p != 2 {
			t.Errorf("%d rotations prepared, want the broken one and another", p)
		}
	})

	t.Run("lost while offered", func(t *testing.T) {
		h, f := newHost()
		member := offerMember(t, h, f, svc, "sandboxpool-c")
		f.BreakHeldExecs(member.ID)
		h.Offer(ctx, "pool-uid", svc.Engine, []host.Member{member})
		if p := f.Calls(fake.VerbPrepareExec); p != 2 {
			t.Errorf("%d rotations prepared, want the lost one replaced when offered again", p)
		}
	})
}

// A replica that gave a host up offers nothing it knew of its members: another
// replica may have given them to Sandboxes meanwhile.
func TestWarmResetForgetsOffersAndClaims(t *testing.T) {
	w := host.NewWarm()
	w.Offer("p", []host.Member{{ID: "m1", Namespace: "ns", Pool: "pool", PoolUID: "p", Class: "c"}, {ID: "m2", Namespace: "ns", Pool: "pool", PoolUID: "p", Class: "c"}})
	if _, ok := w.Take("ns", "c", nil); !ok {
		t.Fatal("nothing to take before the reset")
	}
	w.Reset()
	if m, ok := w.Take("ns", "c", nil); ok {
		t.Fatalf("took %s after the reset", m.ID)
	}
	if w.Taken("m1") || w.Taken("m2") {
		t.Fatal("a member is still taken after the reset")
	}
	w.Offer("p", []host.Member{{ID: "m2", Namespace: "ns", Pool: "pool", PoolUID: "p", Class: "c"}})
	if m, ok := w.Take("ns", "c", nil); !ok || m.ID != "m2" {
		t.Fatalf("after the reset and a fresh offer: %+v %v, want m2", m, ok)
	}
}
