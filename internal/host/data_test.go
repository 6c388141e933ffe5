package host_test

import (
	"context"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/host/step"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// ended and running are what a step's runner, and a read of its state, print.
var (
	ended   = dd.ExecResult{ExitCode: step.RunnerExit, Stdout: "exit 0\n"}
	running = dd.ExecResult{Stdout: "running\nstarted 1\nnow 2\n"}
	done    = dd.ExecResult{Stdout: "exit 0 3\nstarted 1\nnow 3\n"}
)

// A data operation is a step of its request; a container's second one runs in
// the runner its first left held (no exec start of its own); one whose held
// shell broke runs in a new one all the same; a slow one is Running, then
// done once its step ends; a Docker failure is an error, not the engine's word.
func TestDataRunsAsAStepHeldAhead(t *testing.T) {
	h, f := newHost()
	svc := service(512 << 20)
	c, err := f.SeedContainer(svc.Container, true)
	if err != nil {
		t.Fatal(err)
	}
	clear := f.OnExec(fake.ExecRule{Result: ended})
	ctx := context.Background()
	data := func(op engine.DataOp, req string) host.DataRun {
		t.Helper()
		run, err := h.Data(ctx, svc, c, "10.0.0.2", engine.DataCall{Op: op, Request: req})
		if err != nil {
			t.Fatalf("%s %s: %v", op, req, err)
		}
		return run
	}
	prepared := func(n int) {
		t.Helper()
		testenv.WaitFor(t, 30*time.Second, 10*time.Millisecond, "a runner held ahead", func() bool { return f.Calls(fake.VerbPrepareExec) == n })
	}
	if run := data(engine.OpCheckpoint, "c1"); run.Running || run.Failed != "" {
		t.Fatalf("checkpoint: %+v", run)
	}
	prepared(2)
	if run := data(engine.OpRestore, "r1"); run.Running || run.Failed != "" {
		t.Fatalf("restore: %+v", run)
	}
	prepared(3) // the restore took the held one, and held the next
	f.BreakHeldExecs(c.ID)
	if run := data(engine.OpReset, "z1"); run.Running || run.Failed != "" {
		t.Fatalf("reset after its held runner broke: %+v", run)
	}
	if x := f.Calls(fake.VerbExec); x != 3 {
		t.Errorf("three quick operations ran %d execs, want 3 (their runners, no state read)", x)
	}

	clear()
	defer f.OnExec(fake.ExecRule{Result: running})()
	f.OnExec(fake.ExecRule{Hang: true, Times: 1}) // the runner, launched
	if run := data(engine.OpReset, "z2"); !run.Running || run.Poll <= 0 {
		t.Fatalf("a slow reset: %+v; want Running, with a poll", run)
	}
	defer f.OnExec(fake.ExecRule{Result: done})()
	if run := data(engine.OpReset, "z2"); run.Running || run.Failed != "" {
		t.Errorf("the slow reset once its step ended: %+v; want done", run)
	}
	defer f.OnExec(fake.ExecRule{Result: dd.ExecResult{ExitCode: step.RunnerExit, Stdout: "exit 1\nout " + hex.EncodeToString([]byte("ERROR: boom")) + "\n"}})()
	if run := data(engine.OpRestore, "r2"); !strings.HasSuffix(run.Failed, "restore: ERROR: boom") {
		t.Errorf("a failed restore: %+v; want the engine's words", run)
	}

	defer f.Inject(fake.Fault{Verb: fake.VerbExec, Err: dd.ErrUnavailable})()
	defer f.Inject(fake.Fault{Verb: fake.VerbPrepareExec, Err: dd.ErrUnavailable})()
	if run, err := h.Data(ctx, svc, c, "10.0.0.2", engine.DataCall{Op: engine.OpReset, Request: "z3"}); err == nil || run.Failed != "" {
		t.Errorf("with Docker down: %+v, err %v; want an error and no verdict", run, err)
	}
}
