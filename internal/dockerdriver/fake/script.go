package fake

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// Forever as Script.Sleep keeps the process running until it is stopped.
const Forever time.Duration = -1

// Script is the program a fake container or exec runs, encoded into its
// command by Command. Steps run in field order. It mirrors
// drivertest.Script field for field, so one converts to the other.
type Script struct {
	Stdout     []string
	Stderr     []string
	FillStdout int
	EchoEnv    []string
	Cat        []string
	Sleep      time.Duration
	Exit       int
	// HoldsItself: the fake gives a held command its environment itself.
	HoldsItself bool
}

const scriptArg0 = "/fake/script"

// KilledAt takes off a "timeout -s KILL N" around cmd (the real driver's
// ExecSpec.KillAtTimeout, the host's bound on a step) and says when the
// command is killed (0: never).
func KilledAt(cmd []string) ([]string, time.Duration) {
	if len(cmd) > 4 && cmd[0] == "timeout" && cmd[1] == "-s" && cmd[2] == "KILL" {
		if n, err := strconv.Atoi(cmd[3]); err == nil {
			return cmd[4:], time.Duration(n) * time.Second
		}
	}
	return cmd, 0
}

// Command encodes s as a command line the fake understands.
func Command(s Script) []string {
	b, _ := json.Marshal(s)
	return []string{scriptArg0, string(b)}
}

// ParseScript decodes a Command; ok is false for any other command.
func ParseScript(cmd []string) (Script, bool) {
	var s Script
	if len(cmd) != 2 || cmd[0] != scriptArg0 || json.Unmarshal([]byte(cmd[1]), &s) != nil {
		return Script{}, false
	}
	return s, true
}

// Output renders what the script writes, given its environment (KEY=value)
// and the files written into its container.
func (s Script) Output(env []string, files map[string][]byte) (stdout, stderr string) {
	var out, errb strings.Builder
	for _, l := range s.Stdout {
		out.WriteString(l + "\n")
	}
	for _, l := range s.Stderr {
		errb.WriteString(l + "\n")
	}
	if s.FillStdout > 0 {
		out.WriteString(strings.Repeat("x\n", s.FillStdout/2+1)[:s.FillStdout])
		out.WriteString("END\n")
	}
	for _, name := range s.EchoEnv {
		out.WriteString(lookupEnv(env, name) + "\n")
	}
	for _, path := range s.Cat {
		content, ok := files[path]
		if !ok {
			errb.WriteString("cat: can't open '" + path + "': No such file or directory\n")
		}
		out.Write(content)
	}
	return out.String(), errb.String()
}

// lookupEnv finds name in a KEY=value list; later entries win, as in a shell.
func lookupEnv(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}
