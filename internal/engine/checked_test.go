package engine

import (
	"os/exec"
	"slices"
	"testing"
)

// A checked step passes exactly when the step itself would have: its exit
// code alone tells, run by a real shell.
func TestCheckedPassesAsTheStepWould(t *testing.T) {
	for _, tc := range []struct {
		cmd  []string
		want bool
	}{
		{[]string{"echo", "PONG"}, true},
		{[]string{"echo", "NOAUTH Authentication required."}, false},
		{[]string{"sh", "-c", "echo PONG; exit 3"}, false},
		{[]string{"sh", "-c", "echo a; echo PONG; echo b"}, true},
	} {
		s := Step{Argv: tc.cmd, Expect: "PONG"}.Checked()
		if s.Expect != "" {
			t.Fatalf("a checked step keeps Expect %q", s.Expect)
		}
		err := exec.Command(s.Argv[0], s.Argv[1:]...).Run()
		if got := err == nil; got != tc.want {
			t.Errorf("%v checked: passed %v, want %v (%v)", tc.cmd, got, tc.want, err)
		}
		cmd, expect, ok := Unchecked(s.Argv)
		if !ok || expect != "PONG" || !slices.Equal(cmd, tc.cmd) {
			t.Errorf("Unchecked(%v) = %v, %q, %v", s.Argv, cmd, expect, ok)
		}
	}
	if s := (Step{Argv: []string{"true"}}).Checked(); !slices.Equal(s.Argv, []string{"true"}) {
		t.Errorf("a step with no Expect is checked by its exit code already: %v", s.Argv)
	}
}
