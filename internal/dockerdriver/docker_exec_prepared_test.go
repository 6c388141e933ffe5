package dockerdriver

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The held shell, run on this machine's sh: values arrive byte for byte, and a
// stdin that closes before the end line runs nothing.
func TestHoldScript(t *testing.T) {
	awkward := "it's \"quoted\" $(touch pwned) `x` \\ $HOME\nsecond line\n\n ü\ttab '"
	input, err := heldEnv(map[string]string{"A_SECRET": awkward, "EMPTY": "", "PLAIN": "p"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var stderr bytes.Buffer
	run := func(stdin []byte) (string, int) {
		cmd := exec.Command("sh", "-c", holdScript, "sh", "sh", "-c", `printf '%s|%s|%s' "$A_SECRET" "$EMPTY" "$PLAIN"; touch ran`)
		stderr.Reset()
		cmd.Dir, cmd.Stdin, cmd.Stderr = dir, bytes.NewReader(stdin), &stderr
		out, _ := cmd.Output()
		return string(out), cmd.ProcessState.ExitCode()
	}
	if out, code := run(input); code != 0 || out != awkward+"||p" {
		t.Errorf("got %q (exit %d), want %q", out, code, awkward+"||p")
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Error("a value was run as a command")
	}
	_ = os.Remove(filepath.Join(dir, "ran"))
	if _, code := run(input[:len(input)-2]); code != 125 {
		t.Errorf("stdin closed before the end line: exit %d, want 125", code)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the command ran although its environment never arrived")
	}
	for _, bad := range []string{"1BAD", "_held_nl", "A-B"} {
		if _, err := heldEnv(map[string]string{bad: "x"}); err == nil {
			t.Errorf("the name %q was accepted", bad)
		}
	}
}
