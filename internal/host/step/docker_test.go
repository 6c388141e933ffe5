package step_test

import (
	"context"
	"strings"
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/host/step"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// observeUntil observes key until its phase is want, and returns that state.
func observeUntil(t *testing.T, r *step.Runner, c dd.Container, key step.Key, want step.Phase) step.State {
	t.Helper()
	var st step.State
	testenv.WaitFor(t, within, 100*time.Millisecond, "step "+string(key)+" "+string(want), func() bool {
		var err error
		st, err = r.Observe(context.Background(), c.ID, key)
		if err != nil {
			t.Fatal(err)
		}
		return st.Phase == want
	})
	return st
}

// A step runs beside its caller: Running with its progress while it waits,
// Done once it ends; one longer than the inline wait is Running from Start;
// one that ends within it is Done from Start; a failure carries its last
// line, cleaned and bounded; an unknown key is Absent.
func TestStepRunsDetached(t *testing.T) { eachRunner(t, testStepRunsDetached) }

func testStepRunsDetached(t *testing.T, d dd.Driver, c dd.Container) {
	ctx := context.Background()
	r := step.New(d, 300*time.Millisecond)
	gate := "/tmp/gate-" + randomHex(4)
	s := step.Step{ID: "gated", Argv: []string{"sh", "-c", `echo "1 of 2: a.sql" >> "$STEP_PROGRESS"
while [ ! -e "$GATE" ]; do sleep 0.05; done
echo "2 of 2: b.sql" >> "$STEP_PROGRESS"`}, Env: map[string]string{"GATE": gate}}
	st, err := r.Start(ctx, c.ID, s)
	if err != nil || st.Phase != step.Running {
		t.Fatalf("Start of a step that waits for its gate = %+v, %v; want Running at once", st, err)
	}
	st = observeUntil(t, r, c, s.Key(), step.Running)
	testenv.WaitFor(t, within, 100*time.Millisecond, "its progress", func() bool {
		st, err = r.Observe(ctx, c.ID, s.Key())
		return err == nil && st.Progress == "1 of 2: a.sql"
	})
	sh(t, d, c, "touch "+gate)
	if st = observeUntil(t, r, c, s.Key(), step.Done); st.Progress != "2 of 2: b.sql" || st.ExitCode != 0 {
		t.Errorf("done: %+v; want its last progress line and exit code 0", st)
	}

	fast := step.New(d, 20*time.Second)
	// Its environment names what a runner's shell might call its own.
	env := map[string]string{"s": "exit 9", "p": "exit 9", "m": "x", "n": "1 2", "D": "/nowhere"}
	if st, err := fast.Start(ctx, c.ID, step.Step{ID: "fast", Argv: []string{"true"}, Env: env}); err != nil || st.Phase != step.Done {
		t.Errorf("Start of a step that ends within the inline wait = %+v, %v; want Done", st, err)
	}
	bad := step.Step{ID: "bad", Argv: []string{"sh", "-c", `printf '%0300d\033]0;title\a\n' 7 >> "$STEP_PROGRESS"
printf 'fine\nERROR:  relation "x" \033[31mdoes not exist\033[0m\n\n'; exit 3`}}
	st, err = fast.Start(ctx, c.ID, bad)
	if err != nil || st.Phase != step.Failed || st.ExitCode != 3 || st.Message != `ERROR: relation "x" [31mdoes not exist[0m` {
		t.Errorf("a failing step = %+v, %v; want Failed, exit code 3, its last line without its escapes", st, err)
	}
	if n := len([]rune(st.Progress)); n > 201 || strings.ContainsAny(st.Progress, "\033\a") {
		t.Errorf("progress of %d runes %q: want it bounded and without control characters", n, st.Progress)
	}
	testStepOutput(t, fast, c)
	if st, err := r.Observe(ctx, c.ID, step.Step{ID: "never", Argv: []string{"true"}}.Key()); err != nil || st.Phase != step.Absent {
		t.Errorf("Observe of a step never started = %+v, %v; want Absent", st, err)
	}
}

// testStepOutput: a Done step that asks for its output answers its tail from
// a whole line (inline, from a held launcher, and read later); one that does
// not answers none.
func testStepOutput(t *testing.T, r *step.Runner, c dd.Container) {
	ctx := context.Background()
	lines := `i=0; while [ $i -lt 200 ]; do echo "checkpoint n$i 1700000000 $i"; i=$((i + 1)); done`
	for i, held := range []string{"new", "held"} {
		s := step.Step{ID: "listing", Argv: []string{"sh", "-c", lines + "; : " + held}, Output: true}
		st, err := r.Start(ctx, c.ID, s)
		if err != nil || st.Phase != step.Done {
			t.Fatalf("%s launcher: Start of a listing = %+v, %v; want Done", held, st, err)
		}
		if !strings.HasPrefix(st.Out, "checkpoint n") || !strings.HasSuffix(st.Out, "checkpoint n199 1700000000 199\n") || len(st.Out) > step.MaxOut {
			t.Errorf("%s launcher: its output %d bytes %.40q…; want its tail from a whole line, at most %d bytes", held, len(st.Out), st.Out, step.MaxOut)
		}
		if read, err := r.Observe(ctx, c.ID, s.Key()); err != nil || read.Out != st.Out {
			t.Errorf("%s launcher: read later: %d bytes, %v; want the same %d bytes", held, len(read.Out), err, len(st.Out))
		}
		if i == 0 {
			r.Hold(c.ID, step.Step{ID: "listing", Argv: []string{"sh", "-c", lines + "; : held"}, Output: true})
		}
	}
	if st, err := r.Start(ctx, c.ID, step.Step{ID: "quiet", Argv: []string{"echo", "hello"}}); err != nil || st.Out != "" {
		t.Errorf("a step that does not ask for its output = %+v, %v; want none", st, err)
	}
}

// A step is run once per key, whoever asks and however often (a second Start
// while it runs, one after it is done, a new runner as after a manager
// restart); Forget lets it run again. Its end is an exec_die with RunnerExit.
func TestStepRunsOncePerKey(t *testing.T) { eachRunner(t, testStepRunsOncePerKey) }

func testStepRunsOncePerKey(t *testing.T, d dd.Driver, c dd.Container) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*within)
	defer cancel()
	events := d.Events(ctx, dd.EventFilter{Names: []string{c.ID}, ExecDie: true})
	file := "/tmp/once-" + randomHex(4)
	s := step.Step{ID: "once", Argv: []string{"sh", "-c", `echo ran >> "$F"; sleep 0.5`}, Env: map[string]string{"F": file}}
	r := step.New(d, 0)
	for range 2 {
		if _, err := r.Start(ctx, c.ID, s); err != nil {
			t.Fatal(err)
		}
	}
	observeUntil(t, r, c, s.Key(), step.Done)
	if st, err := step.New(d, time.Second).Start(ctx, c.ID, s); err != nil || st.Phase != step.Done {
		t.Errorf("Start by a new runner of a step done = %+v, %v; want Done", st, err)
	}
	if got := sh(t, d, c, "cat "+file); got != "ran\n" {
		t.Errorf("the step wrote %q; want one line: it ran once", got)
	}
	waitRunnerExit(t, events)

	if st, err := r.Forget(ctx, c.ID, s.Key()); err != nil || st.Phase != step.Absent {
		t.Fatalf("Forget of a step done = %+v, %v; want Absent", st, err)
	}
	r.Start(ctx, c.ID, s) //nolint:errcheck // observed below
	observeUntil(t, r, c, s.Key(), step.Done)
	if got := sh(t, d, c, "cat "+file); got != "ran\nran\n" {
		t.Errorf("after Forget the step wrote %q; want a second line", got)
	}
}

// waitRunnerExit waits for an exec_die of a step's runner.
func waitRunnerExit(t *testing.T, events <-chan dd.Event) {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case e := <-events:
			if e.Type == dd.EventExecDie && e.ExitCode == step.RunnerExit && e.ExecID != "" {
				return
			}
		case <-timeout:
			t.Fatalf("no exec_die with exit code %d within %s", step.RunnerExit, within)
		}
	}
}

// Cancel kills the step's whole process group, grandchildren included, and
// the step is Cancelled; postgres, whose postmaster reaps what is orphaned
// to PID 1, goes on as it was (no child taken for a crashed backend) where
// the container has perl.
func TestStepCancelKillsItsGroupAndSparesPostgres(t *testing.T) {
	eachRunner(t, testStepCancelKillsItsGroupAndSparesPostgres)
}

func testStepCancelKillsItsGroupAndSparesPostgres(t *testing.T, d dd.Driver, c dd.Container) {
	ctx := context.Background()
	r := step.New(d, 300*time.Millisecond)
	const mark = "sleep 1017" // the container is the test's own: this finds the step's processes
	s := step.Step{ID: "stuck", Argv: []string{"sh", "-c", `sh -c "sh -c '` + mark + `' & ` + mark + ` & wait" &
echo started >> "$STEP_PROGRESS"; wait`}}
	if _, err := r.Start(ctx, c.ID, s); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, within, 100*time.Millisecond, "the step's processes", func() bool { return running(t, d, c, mark) >= 4 })
	before := postmasterChildren(t, d, c)

	st, err := r.Cancel(ctx, c.ID, s.Key())
	if err != nil || st.Phase != step.Cancelled && st.Phase != step.Running {
		t.Fatalf("Cancel = %+v, %v; want Cancelled (or Running while it dies)", st, err)
	}
	observeUntil(t, r, c, s.Key(), step.Cancelled)
	testenv.WaitFor(t, within, 100*time.Millisecond, "no process of the step left", func() bool { return running(t, d, c, mark) == 0 })
	// Without perl no runner is the subreaper: postgres reaps the orphans
	// and takes them for crashed backends (the images without perl are not
	// postgres').
	withPerl := strings.TrimSpace(sh(t, d, c, "command -v perl || true")) != ""
	if after := postmasterChildren(t, d, c); withPerl && strings.Join(after, " ") != strings.Join(before, " ") {
		logs, _ := d.LogsTail(ctx, c.ID, 10)
		t.Errorf("postgres' children were %v before the cancel and %v after: it restarted them; its log:\n%s", before, after, logs)
	}
	// Note: an inline wait the launch outlasts on no loaded machine (a Start
	// whose runner has not ended by then answers Running, to be observed).
	if st, err := step.New(d, within).Start(ctx, c.ID, s); err != nil || st.Phase != step.Cancelled {
		t.Errorf("Start of a step cancelled = %+v, %v; want it left Cancelled, not run again", st, err)
	}
	if n := running(t, d, c, mark); n != 0 {
		t.Errorf("%d processes of the step after a Start of it cancelled; want none: it ran again", n)
	}
}

// A step that supersedes cancels the running steps of its ID (their whole
// group) and removes those ended, beside its own run; steps of other IDs are
// left alone.
func TestStepSupersedesItsID(t *testing.T) { eachRunner(t, testStepSupersedesItsID) }

func testStepSupersedesItsID(t *testing.T, d dd.Driver, c dd.Container) {
	ctx := context.Background()
	r := step.New(d, 300*time.Millisecond)
	done := step.Step{ID: "op", Supersedes: true, Argv: []string{"true"}, Env: map[string]string{"N": "0"}}
	if _, err := r.Start(ctx, c.ID, done); err != nil {
		t.Fatal(err)
	}
	observeUntil(t, r, c, done.Key(), step.Done)
	const mark = "sleep 1018"
	stuck := step.Step{ID: "op", Supersedes: true, Argv: []string{"sh", "-c", mark + " & wait"}, Env: map[string]string{"N": "1"}}
	other := step.Step{ID: "op-other", Argv: []string{"sh", "-c", mark + " & wait"}}
	for _, s := range []step.Step{stuck, other} {
		if st, err := r.Start(ctx, c.ID, s); err != nil || st.Phase != step.Running {
			t.Fatalf("Start of %s = %+v, %v; want Running", s.ID, st, err)
		}
	}
	testenv.WaitFor(t, within, 100*time.Millisecond, "the steps' processes", func() bool { return running(t, d, c, mark) == 4 }) // a shell and a sleep each

	next := step.Step{ID: "op", Supersedes: true, Argv: []string{"true"}, Env: map[string]string{"N": "2"}}
	if _, err := r.Start(ctx, c.ID, next); err != nil {
		t.Fatal(err)
	}
	observeUntil(t, r, c, next.Key(), step.Done)
	observeUntil(t, r, c, stuck.Key(), step.Cancelled)
	testenv.WaitFor(t, within, 100*time.Millisecond, "only the other ID's processes left", func() bool { return running(t, d, c, mark) == 2 })
	if st, err := r.Observe(ctx, c.ID, done.Key()); err != nil || st.Phase != step.Absent {
		t.Errorf("the ended step superseded = %+v, %v; want it removed (Absent)", st, err)
	}
	if st, err := r.Observe(ctx, c.ID, other.Key()); err != nil || st.Phase != step.Running {
		t.Errorf("a step of another ID = %+v, %v; want it Running still", st, err)
	}
}

// A runner caught between making its directory and writing its record (a
// busy host may hold it there for long) is starting, not lost.
func TestStepStartingIsNotLost(t *testing.T) {
	d, c := postgresContainer(t)
	r := step.New(d, 0)
	key := step.Step{ID: "starting", Argv: []string{"true"}}.Key()
	sh(t, d, c, "mkdir -p "+step.Base+"/"+string(key)+" && : > "+step.Base+"/"+string(key)+"/runner")
	if st, err := r.Observe(context.Background(), c.ID, key); err != nil || st.Phase != step.Running {
		t.Errorf("a step whose runner has not written its record = %+v, %v; want Running", st, err)
	}
}
