package step

import (
	"testing"
	"time"
)

// TestSimulatedRoundTrip: a simulator that decodes this package's commands
// and prints what it holds is read back as a container's answer would be.
func TestSimulatedRoundTrip(t *testing.T) {
	s := Step{ID: "seed", Argv: []string{"sh", "-c", "true"}}
	key := s.Key()
	if r, ok := Decode(launchCmd(s), map[string]string{"STEP_DIR": dir(key), "STEP_SUPERSEDE": "1"}); !ok || r.Verb != VerbStart || r.Key != key || len(r.Argv) != 3 || !r.Supersedes {
		t.Fatalf("start decoded as %+v, %v", r, ok)
	}
	observe := []string{"sh", "-c", cancelScript, "step", dir(key), ticks(300 * time.Millisecond), ticks(0)}
	if r, ok := Decode(observe, nil); !ok || r.Verb != VerbCancel || r.Wait != 300*time.Millisecond {
		t.Fatalf("cancel decoded as %+v, %v", r, ok)
	}
	if _, ok := Decode([]string{"sh", "-c", "echo", "step", "x"}, nil); ok {
		t.Fatal("a foreign command decoded")
	}
	now := time.Unix(1000, 0)
	st, err := parse(Print(&Simulated{Started: now.Add(-41 * time.Second), Progressed: now.Add(-5 * time.Second),
		Progress: "1 of 2\n2 of 2 scripts, b.sql\n"}, now))
	if err != nil || st.Phase != Running || st.Elapsed != 41*time.Second || st.ProgressFor != 5*time.Second || st.Progress != "2 of 2 scripts, b.sql" {
		t.Fatalf("running read back as %+v, %v", st, err)
	}
	st, err = parse(Print(&Simulated{Started: now.Add(-time.Second), Ended: now, ExitCode: 1, Out: "boom\n"}, now))
	if err != nil || st.Phase != Failed || st.ExitCode != 1 || st.Message != "boom" {
		t.Fatalf("failed read back as %+v, %v", st, err)
	}
	if st, _ := parse(Print(nil, now)); st.Phase != Absent {
		t.Fatalf("absent read back as %+v", st)
	}
}
