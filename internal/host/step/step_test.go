package step

import (
	"context"
	"encoding/hex"
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
			State{Phase: Done, Elapsed: 30 * time.Second}},
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

// On a driver: Start is one detached exec and one exec that reads the state;
// Observe is one exec; a driver's failure is an error, not a state.
func TestRunnerCalls(t *testing.T) {
	f := fake.New()
	c, err := f.SeedContainer(dd.ContainerSpec{Name: "c", Image: "img", Labels: map[string]string{"o": "1"}, OwnerLabel: "o"}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer f.OnExec(fake.ExecRule{Result: dd.ExecResult{Stdout: "running\nstarted 1\nnow 2\nprogress \nout \n"}})()
	r := New(f, 300*time.Millisecond)
	s := Step{ID: "seed", Argv: []string{"true"}}
	ctx := context.Background()
	if st, err := r.Start(ctx, c.ID, s); err != nil || st.Phase != Running || st.Key != s.Key() {
		t.Fatalf("Start = %+v, %v", st, err)
	}
	if f.Calls(fake.VerbExecDetached) != 1 || f.Calls(fake.VerbExec) != 1 {
		t.Errorf("Start made %d detached execs and %d execs; want 1 and 1", f.Calls(fake.VerbExecDetached), f.Calls(fake.VerbExec))
	}
	if _, err := r.Observe(ctx, c.ID, s.Key()); err != nil || f.Calls(fake.VerbExec) != 2 {
		t.Errorf("Observe: %v, %d execs in all; want one more", err, f.Calls(fake.VerbExec))
	}
	defer f.Inject(fake.Fault{Verb: fake.VerbExecDetached, Err: dd.ErrUnavailable})()
	if _, err := r.Start(ctx, c.ID, s); err == nil {
		t.Errorf("Start with Docker down gave no error")
	}
	if _, err := r.Observe(ctx, c.ID, "../x"); err == nil {
		t.Errorf("Observe of an invalid key gave no error")
	}
}
