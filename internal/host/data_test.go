package host_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// A container's second data operation runs in the exec its first left
// prepared (no exec start of its own); one whose held shell broke runs as a
// new exec all the same; a Docker failure is an error, not the engine's word.
func TestDataRunsTheNextOperationPreparedAhead(t *testing.T) {
	_, f := newHost()
	d := &execCounter{Driver: f}
	h := host.New(d, time.Second, host.NewPulls(d, func(string) {}, nil))
	svc := service(512 << 20)
	c, err := f.SeedContainer(svc.Container, true)
	if err != nil {
		t.Fatal(err)
	}
	defer f.OnExec(fake.ExecRule{Result: dd.ExecResult{Stdout: engine.DataDone + "\n"}})()
	ctx := context.Background()
	if failed, _, err := h.Data(ctx, svc, c, "10.0.0.2", engine.OpCheckpoint, "c1"); failed != "" || err != nil {
		t.Fatalf("checkpoint: %q, %v", failed, err)
	}
	if x := d.execs.Load(); x != 1 {
		t.Fatalf("the first operation started %d execs, want 1", x)
	}
	testenv.WaitFor(t, 30*time.Second, 10*time.Millisecond, "the next operation prepared", func() bool {
		return f.Calls(fake.VerbPrepareExec) == 1
	})
	if failed, _, err := h.Data(ctx, svc, c, "10.0.0.2", engine.OpRestore, "r1"); failed != "" || err != nil {
		t.Fatalf("restore: %q, %v", failed, err)
	}
	if x, ran := d.execs.Load(), f.Calls(fake.VerbExec); x != 1 || ran != 2 {
		t.Errorf("after the second operation, %d execs started and %d ran; want 1 started, 2 run (the second prepared)", x, ran)
	}

	testenv.WaitFor(t, 30*time.Second, 10*time.Millisecond, "the third prepared", func() bool {
		return f.Calls(fake.VerbPrepareExec) == 2
	})
	f.BreakHeldExecs(c.ID)
	if failed, _, err := h.Data(ctx, svc, c, "10.0.0.2", engine.OpReset, "z1"); failed != "" || err != nil {
		t.Fatalf("reset after its held exec broke: %q, %v", failed, err)
	}
	if x := d.execs.Load(); x != 2 {
		t.Errorf("the reset after its held exec broke started %d execs in all, want 2", x)
	}

	defer f.Inject(fake.Fault{Verb: fake.VerbExec, Err: dd.ErrUnavailable})()
	defer f.Inject(fake.Fault{Verb: fake.VerbPrepareExec, Err: dd.ErrUnavailable})()
	if failed, _, err := h.Data(ctx, svc, c, "10.0.0.2", engine.OpReset, "z2"); err == nil || failed != "" {
		t.Errorf("with Docker down: failed %q, err %v; want an error and no verdict", failed, err)
	}
}

// execCounter counts the execs started as such, not those run prepared.
type execCounter struct {
	*fake.Driver
	execs atomic.Int32
}

func (d *execCounter) Exec(ctx context.Context, id string, spec dd.ExecSpec) (dd.ExecResult, error) {
	d.execs.Add(1)
	return d.Driver.Exec(ctx, id, spec)
}
