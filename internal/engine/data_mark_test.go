package engine

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// markedStep runs the data step's prelude and mark around an operation that
// only logs itself, with this machine's sh, the container's /tmp under dir:
// ran says whether the operation ran, and the step must pass either way.
func markedStep(t *testing.T, dir string, op DataOp, request string) (ran bool) {
	t.Helper()
	script := strings.ReplaceAll(dataPrelude+`echo "$OP" >> /tmp/log`+"\n"+dataMark, "/tmp/", dir+"/")
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = os.Environ()
	for k, v := range (DataCall{Op: op, Request: request}).Env() {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "log"))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasSuffix(string(out), DataDone+"\n") {
		t.Fatalf("%s %s: %v: %s", op, request, err, out)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "log"))
	return len(after) > len(before)
}

func TestDataMarkRunsEachRequestOnceInARow(t *testing.T) {
	dir := t.TempDir()
	steps := []struct {
		op      DataOp
		request string
		ran     bool
	}{
		{OpInitial, "initial", true},
		{OpCheckpoint, "d1:Checkpoint:", true},
		{OpCheckpoint, "d1:Checkpoint:", false}, // a manager restarted mid-request, or a lost status
		{OpRestore, "d1:Restore:", true},        // the id reused with another action
		{OpCheckpoint, "d1:Checkpoint:", true},  // and back: the last request was another
		{OpCheckpoint, "d1:Checkpoint:redis", true},
		{OpList, "list", true}, // not a request: the last one stays
		{OpCheckpoint, "d1:Checkpoint:redis", false},
		{OpInitial, "initial", false}, // once per container, whatever ran between
	}
	for _, s := range steps {
		if got := markedStep(t, dir, s.op, s.request); got != s.ran {
			t.Errorf("%s %s: ran %v, want %v", s.op, s.request, got, s.ran)
		}
	}
}

// A container of an earlier release kept each "op-id" done as a file: those
// still count until it does a request under this release.
func TestDataMarkReadsAnEarlierReleasesMarks(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{".sandbox-data-initial-initial", ".sandbox-data-checkpoint-d1"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		op      DataOp
		request string
		ran     bool
	}{
		{OpInitial, "initial", false},
		{OpCheckpoint, "d1:Checkpoint:", false},
		{OpRestore, "d1:Restore:", true},
		{OpCheckpoint, "d1:Checkpoint:", true},
	}
	for _, s := range steps {
		if got := markedStep(t, dir, s.op, s.request); got != s.ran {
			t.Errorf("%s %s: ran %v, want %v", s.op, s.request, got, s.ran)
		}
	}
}
