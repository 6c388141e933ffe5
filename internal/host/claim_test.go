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
	h.Warm().Offer("pool-uid", []host.Member{m})
	return m
}

// Offering a member starts nothing in it, and a claim whose Sandbox's password
// is the member's own (a new Sandbox) runs no exec: a claim's only Docker work
// is its rename. A claim for a Sandbox whose Secret exists rotates the member:
// one exec, prepared and run at claim.
func TestClaimRunsAnExecOnlyToRotate(t *testing.T) {
	ctx := context.Background()
	svc := service(512 << 20)
	h, f := newHost()
	defer f.OnExec(fake.ExecRule{Result: dd.ExecResult{Stdout: "sandbox-rotated\n"}})()
	offerMember(t, h, f, svc, "sandboxpool-a")
	if n := f.Calls(fake.VerbPrepareExec); n != 0 {
		t.Fatalf("offering a member started %d execs in it, want none", n)
	}

	own := svc
	own.Password = "member-pw"
	m, _ := h.Warm().Take("ns", "class", nil)
	if got, err := h.Claim(ctx, own, m); err != nil || got.Container.Name != svc.Container.Name {
		t.Fatalf("Claim = %+v, %v", got, err)
	}
	if p, x := f.Calls(fake.VerbPrepareExec), f.Calls(fake.VerbExec); p != 0 || x != 0 {
		t.Errorf("claiming with the member's own password prepared %d and ran %d execs, want none", p, x)
	}

	h, f = newHost()
	defer f.OnExec(fake.ExecRule{Result: dd.ExecResult{Stdout: "sandbox-rotated\n"}})()
	offerMember(t, h, f, svc, "sandboxpool-b")
	rotated := svc
	rotated.Password = "sandbox-pw"
	m, _ = h.Warm().Take("ns", "class", nil)
	if _, err := h.Claim(ctx, rotated, m); err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if p, x := f.Calls(fake.VerbPrepareExec), f.Calls(fake.VerbExec); p != 1 || x != 1 {
		t.Errorf("claiming for an existing Secret prepared %d and ran %d execs, want the rotation, once", p, x)
	}
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
