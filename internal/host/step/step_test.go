package step

import (
	"context"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

func TestKeyTellsStepsApart(t *testing.T) {
	s := Step{ID: "seed", Argv: []string{"sh", "-c", "x"}, Env: map[string]string{"A": "1"}}
	other := s
	other.Env = map[string]string{"A": "2"}
	if s.Key() == other.Key() || s.Key() != (Step{ID: "seed", Argv: []string{"sh", "-c", "x"}, Env: map[string]string{"A": "1"}}).Key() {
		t.Errorf("keys %s, %s: want the same step the same key, another environment another", s.Key(), other.Key())
	}
	if !strings.HasPrefix(string(s.Key()), "seed-") || s.Key().valid() != nil {
		t.Errorf("key %s: want seed-<hash>, a valid directory name", s.Key())
	}
	for _, id := range []string{"", "Seed", "../x", "a/b", strings.Repeat("a", 41), "-x"} {
		if (Step{ID: id, Argv: []string{"true"}}).valid() == nil {
			t.Errorf("step ID %q accepted", id)
		}
	}
	if Key("../../etc").valid() == nil {
		t.Errorf("a key that climbs out of the step directory is accepted")
	}
}

func hexOf(s string) string { return hex.EncodeToString([]byte(s)) }

func TestParseReadsWhatObservePrints(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      State
	}{
		{"absent", "absent\n", State{Phase: Absent}},
		{"running", "running\nstarted 100\nnow 141\nprogress " + hexOf("1 of 3\n3 of 12: 10-schema.sql\n") + "\nout \n",
			State{Phase: Running, Elapsed: 41 * time.Second, Progress: "3 of 12: 10-schema.sql"}},
		{"done", "exit 0 130\nstarted 100\nnow 200\nprogress \nout " + hexOf("chatter") + "\n",
			State{Phase: Done, Elapsed: 30 * time.Second, Out: "chatter"}},
		{"done, its output a tail", "exit 0 100\nstarted 100\nnow 100\nout " + hexOf("x"+strings.Repeat("line\n", MaxOut/5+1)) + "\n",
			State{Phase: Done, Out: strings.Repeat("line\n", MaxOut/5)}},
		{"failed", "exit 3 101\nstarted 100\nnow 200\nprogress \nout " + hexOf("a\nb.sql: ERROR: \x1b[1mno\u202e\n\n") + "\n",
			State{Phase: Failed, ExitCode: 3, Elapsed: time.Second, Message: "b.sql: ERROR: [1mno"}},
		{"failed silently", "exit 9 100\nstarted 100\nnow 100\nprogress \nout \n", State{Phase: Failed, ExitCode: 9, Message: "exit code 9"}},
		{"cancelled", "exit 137 100\ncancelled\nstarted 100\nnow 100\nprogress \nout \n", State{Phase: Cancelled, ExitCode: 137, Message: "cancelled"}},
		{"done despite a late cancel", "exit 0 100\ncancelled\nstarted 100\nnow 100\nprogress \nout \n", State{Phase: Done}},
		{"lost", "lost\nstarted 100\nnow 160\nprogress \nout \n", State{Phase: Failed, ExitCode: -1, Elapsed: time.Minute,
			Message: "the step's runner ended without recording its end (killed, or its container restarted)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parse(tc.out)
			if err != nil || got != tc.want {
				t.Errorf("parse = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	for _, bad := range []string{"", "hello\n", "running\nprogress zz\n", "exit x 1\n"} {
		if _, err := parse(bad); err == nil {
			t.Errorf("parse(%q) gave no error", bad)
		}
	}
}

func TestCleanBoundsUntrustedText(t *testing.T) {
	for in, want := range map[string]string{
		"  a\tb\r\n c  ":               "a b c",
		"\x1b]0;title\x07x":            "]0;titlex",
		"bidi\u202eevil\u200b":         "bidievil",
		"bad \xff utf8":                "bad \uFFFD utf8",
		strings.Repeat("é", 300):       strings.Repeat("é", 200) + "…",
		strings.Repeat("a ", 150) + "": strings.TrimSpace(strings.Repeat("a ", 100)) + "…",
	} {
		if got := clean(in, 200); got != want {
			t.Errorf("clean(%q) = %q, want %q", in, got, want)
		}
	}
}

// On a driver: Start is one prepared exec launched, answered by the runner
// itself when the step ends within the inline wait, else Running with no
// other exec (its state is the next Observe's); a runner held ahead spares
// the exec start; Observe is one exec; a driver's failure is an error, not a state.
func TestRunnerCalls(t *testing.T) {
	f := fake.New()
	c, err := f.SeedContainer(dd.ContainerSpec{Name: "c", Image: "img", Labels: map[string]string{"o": "1"}, OwnerLabel: "o"}, true)
	if err != nil {
		t.Fatal(err)
	}
	r := New(f, 300*time.Millisecond)
	s := Step{ID: "seed", Argv: []string{"true"}}
	ctx := context.Background()
	defer f.OnExec(fake.ExecRule{Result: dd.ExecResult{Stdout: "running\nstarted 1\nnow 2\n"}})()
	f.OnExec(fake.ExecRule{Hang: true, Times: 1})
	if st, err := r.Start(ctx, c.ID, s); err != nil || st.Phase != Running || st.Key != s.Key() {
		t.Fatalf("Start of a step that runs on = %+v, %v", st, err)
	}
	if p, x := f.Calls(fake.VerbPrepareExec), f.Calls(fake.VerbExec); p != 1 || x != 1 {
		t.Errorf("Start of a slow step prepared %d execs and ran %d; want the runner's only, 1 and 1", p, x)
	}
	defer f.OnExec(fake.ExecRule{Result: dd.ExecResult{ExitCode: RunnerExit, Stdout: "exit 0 2\nstarted 1\nnow 2\n"}, Times: 1})()
	r.Hold(c.ID, s)
	if st, err := r.Start(ctx, c.ID, Step{ID: "seed", Argv: []string{"true"}, Env: map[string]string{"A": "1"}}); err != nil || st.Phase != Done || st.Elapsed != time.Second {
		t.Fatalf("Start of a step that ends at once = %+v, %v", st, err)
	}
	if p, x := f.Calls(fake.VerbPrepareExec), f.Calls(fake.VerbExec); p != 2 || x != 2 {
		t.Errorf("Hold, then Start: %d prepared and %d run in all; want 2 and 2 (Start took the held one)", p, x)
	}
	if _, err := r.Observe(ctx, c.ID, s.Key()); err != nil || f.Calls(fake.VerbExec) != 3 {
		t.Errorf("Observe: %v, %d execs in all; want one more", err, f.Calls(fake.VerbExec))
	}
	defer f.Inject(fake.Fault{Verb: fake.VerbPrepareExec, Err: dd.ErrUnavailable})()
	if _, err := r.Start(ctx, c.ID, s); err == nil {
		t.Errorf("Start with Docker down gave no error")
	}
	if _, err := r.Observe(ctx, c.ID, "../x"); err == nil {
		t.Errorf("Observe of an invalid key gave no error")
	}
}

// A state read that hangs is killed at its timeout: the container is not
// left busy, and the next read runs (at a load of 74, state reads left
// running refused every later step there, and six Sandboxes never became
// Ready).
func TestStateReadThatHangsIsKilledAtItsTimeout(t *testing.T) {
	f := fake.New()
	c, err := f.SeedContainer(dd.ContainerSpec{Name: "c", Image: "img", Labels: map[string]string{"o": "1"}, OwnerLabel: "o"}, true)
	if err != nil {
		t.Fatal(err)
	}
	r := New(f, 300*time.Millisecond)
	key := Step{ID: "probe", Argv: []string{"true"}}.Key()
	ctx := context.Background()
	// Note: the hung read runs on in its container while its rule is in place.
	defer f.OnExec(fake.ExecRule{Hang: true})()
	if _, err := r.Observe(ctx, c.ID, key); !errors.Is(err, dd.ErrTimeout) {
		t.Fatalf("a hung state read = %v; want a timeout", err)
	}
	defer f.OnExec(fake.ExecRule{Result: dd.ExecResult{Stdout: "running\nstarted 1\nnow 2\n"}})()
	if st, err := r.Observe(ctx, c.ID, key); err != nil || st.Phase != Running {
		t.Fatalf("the read after a hung one = %+v, %v; want it run", st, err)
	}
}

// A step that ends after the inline wait is read, by the pass its end wakes,
// from what its runner printed as it ended: no state exec. A later Observe
// (the answer was taken) reads the container again.
func TestRunnerReadsALateEndWithoutAnExec(t *testing.T) {
	f := fake.New()
	c, err := f.SeedContainer(dd.ContainerSpec{Name: "c", Image: "img", Labels: map[string]string{"o": "1"}, OwnerLabel: "o"}, true)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ends := f.Events(ctx, dd.EventFilter{Labels: map[string]string{"o": "1"}, ExecDie: true})
	r := New(f, 50*time.Millisecond)
	s := Step{ID: "data", Argv: []string{"true"}}
	defer f.OnExec(fake.ExecRule{Result: dd.ExecResult{Stdout: "running\nstarted 1\nnow 2\n"}})()
	f.OnExec(fake.ExecRule{Result: dd.ExecResult{ExitCode: RunnerExit, Stdout: "exit 0\n"}, Delay: 300 * time.Millisecond, Times: 1})
	if st, err := r.Start(ctx, c.ID, s); err != nil || st.Phase != Running {
		t.Fatalf("Start of a step that ends after the inline wait = %+v, %v; want Running", st, err)
	}
	for ev := range ends {
		if ev.Type == dd.EventExecDie && ev.ExitCode == RunnerExit {
			break
		}
	}
	before := f.Calls(fake.VerbExec)
	if st, err := r.Observe(ctx, c.ID, s.Key()); err != nil || st.Phase != Done || st.Key != s.Key() || f.Calls(fake.VerbExec) != before {
		t.Errorf("Observe once its end came = %+v, %v, %d execs; want Done, its key, no exec", st, err, f.Calls(fake.VerbExec)-before)
	}
	if _, err := r.Observe(ctx, c.ID, s.Key()); err != nil || f.Calls(fake.VerbExec) != before+1 {
		t.Errorf("Observe after the late end was taken: %v, %d execs; want one", err, f.Calls(fake.VerbExec)-before)
	}
}
