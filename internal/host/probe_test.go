package host_test

import (
	"context"
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
)

// quickProbe is an engine whose probe gives up after 200 ms, so that a test
// sees a hung probe time out without waiting the engine's own seconds.
type quickProbe struct{ engine.Engine }

func (q quickProbe) Probe(password, addr string) engine.Step {
	s := q.Engine.Probe(password, addr)
	s.Timeout = 200 * time.Millisecond
	return s
}

// A probe that hangs in its container is killed there when it times out: the
// next exec runs, rather than being refused because the hung one still runs
// (CI: a mongosh probe stuck for minutes held a trio's mongo unready until
// `kubectl wait` gave up, every later probe refused as busy). The container's
// later probes run beside the pass (controllers/sandbox's probe specs).
func TestProbeThatHangsIsKilledAtItsTimeout(t *testing.T) {
	ctx := context.Background()
	svc := service(512 << 20)
	svc.Engine = quickProbe{svc.Engine}
	h, f := newHost()
	c, err := f.SeedContainer(svc.Container, true)
	if err != nil {
		t.Fatal(err)
	}
	probe := svc.Engine.Probe(svc.Password, "10.0.0.2").Argv[0]
	defer f.OnExec(fake.ExecRule{Container: c.ID, Command: probe, Hang: true})()
	if p := h.Probe(ctx, svc, dd.Container{ID: c.ID, Name: c.Name}, "10.0.0.2"); p.Passed {
		t.Fatalf("a hung probe passed: %+v", p)
	}
	for i := range 3 {
		if _, err := f.Exec(ctx, c.ID, dd.ExecSpec{Cmd: []string{"true"}}); err != nil {
			t.Fatalf("exec %d after the hung probe timed out: %v; want it run", i+1, err)
		}
	}
}
