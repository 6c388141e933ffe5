package step

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
)

// This file is for simulators of a container (the controllers' engine
// simulator): what a command this package builds asks, and the answer a
// container would print, so that a simulated step goes through the same
// parsing as a real one.

// Verb is what a command of this package asks of a container.
type Verb string

const (
	VerbStart   Verb = "start"
	VerbObserve Verb = "observe"
	VerbCancel  Verb = "cancel"
	VerbForget  Verb = "forget"
)

// Request is a decoded command of this package.
type Request struct {
	Verb Verb
	Key  Key
	// Argv is the step's command, Supersedes its option (VerbStart).
	Argv       []string
	Supersedes bool
	// Wait is how long the command waits for the step's end before it answers
	// (VerbObserve, VerbCancel; Start's is the observe that follows it).
	Wait time.Duration
}

// Decode reads a command this package built, with the environment it runs
// with (a start's key and options are there); ok is false for any other.
func Decode(cmd []string, env map[string]string) (r Request, ok bool) {
	if len(cmd) < 5 || cmd[0] != "sh" || cmd[1] != "-c" || cmd[3] != "step" {
		return Request{}, false
	}
	if cmd[2] == reaper {
		if len(cmd) <= len(launcher) || !slices.Equal(cmd[:len(launcher)], launcher) {
			return Request{}, false
		}
		return Request{Verb: VerbStart, Key: keyOf(env["STEP_DIR"]), Argv: cmd[len(launcher):], Supersedes: env["STEP_SUPERSEDE"] == "1"}, true
	}
	verbs := map[string]Verb{observeScript: VerbObserve, cancelScript: VerbCancel, forgetScript: VerbForget}
	v, known := verbs[cmd[2]]
	if !known || len(cmd) != 7 {
		return Request{}, false
	}
	var n int
	_, _ = fmt.Sscan(cmd[5], &n) // a bad count waits for nothing
	return Request{Verb: v, Key: keyOf(cmd[4]), Wait: time.Duration(n) * 50 * time.Millisecond}, true
}

func keyOf(dir string) Key { return Key(strings.TrimPrefix(dir, Base+"/")) }

// Simulated is a step as a simulated container holds it.
type Simulated struct {
	Started, Ended, Progressed time.Time
	// Ended.IsZero(): running; else ExitCode is the step's.
	ExitCode  int
	Cancelled bool
	// Progress and Out are what the step wrote to its progress file and its
	// output.
	Progress, Out string
}

// Taken is what a runner answers, ended, when its key was taken.
const Taken = runnerTaken

// Print is what a container prints for observe at now: s, or absent (nil).
func Print(s *Simulated, now time.Time) string {
	if s == nil {
		return "absent\n"
	}
	var b strings.Builder
	if s.Ended.IsZero() {
		b.WriteString("running\n")
	} else {
		fmt.Fprintf(&b, "exit %d %d\n", s.ExitCode, s.Ended.Unix())
	}
	if s.Cancelled {
		b.WriteString("cancelled\n")
	}
	fmt.Fprintf(&b, "started %d\nnow %d\n", s.Started.Unix(), now.Unix())
	fmt.Fprintf(&b, "progress %s\nout %s\n", hex.EncodeToString([]byte(s.Progress)), hex.EncodeToString([]byte(s.Out)))
	if !s.Progressed.IsZero() {
		fmt.Fprintf(&b, "progressed %d\n", s.Progressed.Unix())
	}
	return b.String()
}
