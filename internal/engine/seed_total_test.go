package engine

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// runInit runs step in a local shell, its state under state and each script
// as runOne: its exit code and stderr (where the shell may say "Killed" first).
func runInit(t *testing.T, state string, step Step, runOne string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), step.Timeout)
	defer cancel()
	argv := append([]string{step.Argv[0], step.Argv[1], strings.ReplaceAll(step.Argv[2], initState, state)}, step.Argv[3:]...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	for k, v := range step.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, "PATH=/usr/bin:/bin", "RUN_ONE="+runOne)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running the init step: %v", err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

// TestSeedStopsAtItsTotalTime: a seed past its total time is stopped and
// fails naming the bound (its exec bounded by it, not by the number of
// scripts); run again it fails the same without running anything, and with
// another total it is cut short, so its container is made again.
func TestSeedStopsAtItsTotalTime(t *testing.T) {
	pg, _ := Lookup("postgres")
	files := []string{"10-slow.sql", "20-more.sql"}
	state := t.TempDir() + "/init"
	step := Seed(pg, "pw", "10.0.0.5", files, time.Minute, time.Second)
	if step.Timeout > 15*time.Second {
		t.Errorf("the exec of a 1s seed of 2 scripts of 1m each may run %s, want its total time and a little slack", step.Timeout)
	}
	code, stderr := runInit(t, state, step, "sleep 30")
	if code != 1 || !strings.Contains(stderr, "10-slow.sql: stopped at the seed's total time of 1s ("+InitPastTotal+")") {
		t.Fatalf("exit %d, %q; want 1 naming 10-slow.sql and the seed's total time", code, stderr)
	}

	code, again := runInit(t, state, step, "echo ran again >&2; exit 1")
	if code != 1 || !strings.HasSuffix(stderr, again) {
		t.Errorf("run again with the same total: exit %d, %q; want 1 and the same message (%q), nothing run", code, again, stderr)
	}
	longer := Seed(pg, "pw", "10.0.0.5", files, time.Minute, time.Minute)
	if code, msg := runInit(t, state, longer, "true"); code != InitCutShort || !strings.Contains(msg, "it may now take 60s") {
		t.Errorf("run again with a longer total: exit %d, %q; want %d (made again) saying so", code, msg, InitCutShort)
	}
}

// TestSeedScriptErrorWithinItsTotal: a script failing on its own within the
// total is named with its own error, and its container is not made again for
// another total.
func TestSeedScriptErrorWithinItsTotal(t *testing.T) {
	pg, _ := Lookup("postgres")
	state := t.TempDir() + "/init"
	step := Seed(pg, "pw", "10.0.0.5", []string{"10-bad.sql"}, time.Minute, time.Minute)
	code, stderr := runInit(t, state, step, "echo 'ERROR: relation \"nope\" does not exist'; exit 3")
	if code != 1 || !strings.Contains(stderr, `10-bad.sql: ERROR: relation "nope" does not exist`) {
		t.Fatalf("exit %d, %q; want 1 naming the key and its error", code, stderr)
	}
	other := Seed(pg, "pw", "10.0.0.5", []string{"10-bad.sql"}, time.Minute, 2*time.Minute)
	if code, again := runInit(t, state, other, "true"); code != 1 || again != stderr {
		t.Errorf("another total after a script's own failure: exit %d, %q; want 1 and the same message", code, again)
	}
}
