package host_test

import (
	"context"
	"testing"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/host/step"
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
	h.Warm().Offer(h.Warm().Epoch(), "pool-uid", []host.Member{m})
	return m
}

// Offering a member starts nothing in it, and a claim whose Sandbox's password
// is the member's own (a new Sandbox) runs no exec: a claim's only Docker work
// is its rename. A claim for a Sandbox whose Secret exists rotates the member:
// one exec, prepared and run at claim (the rotation's step runner, launched:
// the rule answers as a runner whose step ended at once, so no state exec).
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
	defer f.OnExec(fake.ExecRule{Result: dd.ExecResult{ExitCode: step.RunnerExit, Stdout: "exit 0 1\nstarted 1\nnow 1\n"}})()
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
	w.Offer(w.Epoch(), "p", []host.Member{{ID: "m1", Namespace: "ns", Pool: "pool", PoolUID: "p", Class: "c"}, {ID: "m2", Namespace: "ns", Pool: "pool", PoolUID: "p", Class: "c"}})
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
	w.Offer(w.Epoch(), "p", []host.Member{{ID: "m2", Namespace: "ns", Pool: "pool", PoolUID: "p", Class: "c"}})
	if m, ok := w.Take("ns", "c", nil); !ok || m.ID != "m2" {
		t.Fatalf("after the reset and a fresh offer: %+v %v, want m2", m, ok)
	}
}

// A pool pass that began before the replica gave the host up (its Lease lost
// and regained meanwhile) offers nothing of what it listed: another replica
// may have given those members to Sandboxes.
func TestWarmDropsOffersOfAPassFromBeforeAReset(t *testing.T) {
	w := host.NewWarm()
	began := w.Epoch()
	w.Reset()
	w.Offer(began, "p", []host.Member{{ID: "m1", Namespace: "ns", Pool: "pool", PoolUID: "p", Class: "c"}})
	if m, ok := w.Take("ns", "c", nil); ok {
		t.Fatalf("took %s, offered by a pass that began before the reset", m.ID)
	}
}

// A member taken before the replica gave the host up is not claimed after:
// nothing is renamed, and the claim says it is stale (the caller neither
// removes the member nor counts it its own).
func TestClaimRefusesAMemberTakenBeforeAReset(t *testing.T) {
	ctx := context.Background()
	svc := service(512 << 20)
	h, f := newHost()
	offerMember(t, h, f, svc, "sandboxpool-a")
	m, ok := h.Warm().Take("ns", "class", nil)
	if !ok {
		t.Fatal("no member to take")
	}
	h.Warm().Reset()
	got, err := h.Claim(ctx, svc, m)
	if err != nil || !got.Stale || got.Renamed {
		t.Fatalf("Claim after a reset = %+v, %v; want Stale, nothing renamed", got, err)
	}
	if n := f.Calls(fake.VerbRename); n != 0 {
		t.Errorf("a member taken before the reset was renamed (%d renames)", n)
	}
}

// A rotation that outlasts the inline wait (mongosh's start alone takes
// seconds) runs on beside the pass: the claim answers it Rotating, with a
// poll; a later Rotate observes it, Running, then rotated once it ends.
func TestClaimsSlowRotationRunsOn(t *testing.T) {
	ctx := context.Background()
	svc := service(512 << 20)
	svc.Password = "sandbox-pw"
	h, f := newHost()
	offerMember(t, h, f, svc, "sandboxpool-a")
	defer f.OnExec(fake.ExecRule{Result: dd.ExecResult{Stdout: "running\nstarted 1\nnow 2\n"}})()
	f.OnExec(fake.ExecRule{Hang: true, Times: 1}) // the runner, launched
	m, _ := h.Warm().Take("ns", "class", nil)
	got, err := h.Claim(ctx, svc, m)
	if err != nil || !got.Renamed || !got.Rotating || got.Poll <= 0 || got.Container.Name != svc.Container.Name {
		t.Fatalf("Claim with a slow rotation = %+v, %v; want it renamed, Rotating, with a poll", got, err)
	}
	if rot := h.Rotate(ctx, svc, m.ID, m.Password, m.Address); !rot.Running || rot.Failed != "" {
		t.Errorf("Rotate while it runs = %+v; want Running", rot)
	}
	defer f.OnExec(fake.ExecRule{Result: dd.ExecResult{Stdout: "exit 0 3\nstarted 1\nnow 3\n"}})()
	if rot := h.Rotate(ctx, svc, m.ID, m.Password, m.Address); rot.Running || rot.Failed != "" {
		t.Errorf("Rotate once it ended = %+v; want rotated", rot)
	}
	if p := f.Calls(fake.VerbPrepareExec); p != 1 {
		t.Errorf("the rotation prepared %d execs; want its runner's, once", p)
	}
}
