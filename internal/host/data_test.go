package host_test

import (
	"context"
	"testing"
	"time"

	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// A data operation is a step of its request; a container's second one runs in
// the runner its first left held (no exec start of its own); one whose held
// shell broke runs in a new one all the same; a slow one is Running, then
// done once its step ends; a Docker failure is an error, not the engine's word.
func TestDataRunsAsAStepHeldAhead(t *testing.T) {
	sim := ct.NewEngineSim()
	sim.AddNetwork("sbx")
	h := host.New(sim, time.Second, host.NewPulls(sim, func(string) {}, nil))
	svc := service(512 << 20)
	c, err := sim.SeedContainer(svc.Container, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.WriteFile(c.ID, "/run/secrets/postgres-password", []byte(svc.Password)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	data := func(op engine.DataOp, req string) host.DataRun {
		t.Helper()
		run, err := h.Data(ctx, svc, c, "10.0.0.2", op, req)
		if err != nil {
			t.Fatalf("%s %s: %v", op, req, err)
		}
		return run
	}
	if run := data(engine.OpCheckpoint, "c1"); run.Running || run.Failed != "" {
		t.Fatalf("checkpoint: %+v", run)
	}
	held := func(n int) {
		t.Helper()
		testenv.WaitFor(t, 30*time.Second, 10*time.Millisecond, "a runner held ahead", func() bool { return sim.Calls(fake.VerbPrepareExec) == n })
	}
	held(2)
	if run := data(engine.OpRestore, "r1"); run.Running || run.Failed != "" {
		t.Fatalf("restore: %+v", run)
	}
	held(3) // the restore took the held one: none of its own
	sim.BreakHeldExecs(c.ID)
	if run := data(engine.OpReset, "z1"); run.Running || run.Failed != "" {
		t.Fatalf("reset after its held runner broke: %+v", run)
	}
	if n := sim.OpsRun(c.ID, engine.OpRestore) + sim.OpsRun(c.ID, engine.OpReset); n != 2 {
		t.Errorf("%d restores and resets ran, want 2", n)
	}

	defer sim.SlowSteps(ct.SlowStep{ID: "data", For: 2 * time.Second})()
	run := data(engine.OpReset, "z2")
	if !run.Running || run.Poll <= 0 {
		t.Fatalf("a slow reset: %+v; want Running, with a poll", run)
	}
	testenv.WaitFor(t, 30*time.Second, 50*time.Millisecond, "the slow reset done", func() bool {
		run = data(engine.OpReset, "z2")
		return !run.Running
	})
	if run.Failed != "" || run.Took < 2*time.Second {
		t.Errorf("the slow reset: %+v; want done, in 2s or more", run)
	}

	defer sim.Inject(fake.Fault{Verb: fake.VerbExec, Err: dd.ErrUnavailable})()
	defer sim.Inject(fake.Fault{Verb: fake.VerbPrepareExec, Err: dd.ErrUnavailable})()
	if run, err := h.Data(ctx, svc, c, "10.0.0.2", engine.OpReset, "z3"); err == nil || run.Failed != "" {
		t.Errorf("with Docker down: %+v, err %v; want an error and no verdict", run, err)
	}
}
