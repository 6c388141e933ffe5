package step_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/host/step"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// TestBenchStepOverhead measures what a step's runner adds to a command that
// ends at once, in a postgres container: a step started from a held launcher
// (as a data operation's is) against the same command run by a held exec (as
// the release before issue 39 ran its data operations), interleaved, 30 each,
// p50 of each and the difference: the runner's fixed cost on a data
// operation's path.
func TestBenchStepOverhead(t *testing.T) {
	testenv.BenchOnly(t)
	d, c := postgresContainer(t)
	ctx := context.Background()
	r := step.New(d, 10*time.Second) // Done from Start, however loaded the machine
	cmd := []string{"sh", "-c", "true"}
	var stepped, held []time.Duration
	for i := range 31 {
		s := step.Step{ID: "bench", Supersedes: true, Argv: cmd, Env: map[string]string{"N": strconv.Itoa(i)}}
		r.Hold(c.ID, s)
		p, err := d.PrepareExec(ctx, c.ID, dd.ExecSpec{Cmd: cmd})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // both held, as a data operation's is by the time the next comes
		start := time.Now()
		if _, err := p.Run(ctx, map[string]string{"N": "x"}); err != nil {
			t.Fatal(err)
		}
		h := time.Since(start)
		start = time.Now()
		st, err := r.Start(ctx, c.ID, s)
		if err != nil || st.Phase != step.Done {
			t.Fatalf("step %d: %+v, %v", i, st, err)
		}
		if i > 0 { // the first one makes the steps' directory
			stepped, held = append(stepped, time.Since(start)), append(held, h)
		}
	}
	t.Logf("a command that ends at once, in a postgres container (load %s): held exec p50 %s, step from a held launcher p50 %s, the runner adds %s",
		loadAvg(), testenv.Median(held), testenv.Median(stepped), testenv.Median(stepped)-testenv.Median(held))
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.Join(strings.Fields(string(b))[:min(3, len(strings.Fields(string(b))))], " ")
}
