// Package step runs long steps inside a container without holding the caller:
// init scripts, data operations, rotations, anything an exec may spend more
// than about a second on. Start launches a step's runner (a prepared exec
// launched: its environment on stdin) and waits a few hundred ms: a step that
// ends within them is answered by its runner at once, a slower one runs on,
// detached, and later calls Observe it from the state it keeps in the
// container; Cancel stops it, and a step that Supersedes stops the others of
// its ID. A runner held ahead (Hold) costs no exec start, and holds itself
// (it is already running, perl started, when its environment comes), so a
// fast step costs what one prepared exec does and a fork. The state lives in the container, not in the
// manager, so a restarted manager finds a step where it is and never runs it
// twice.
//
// In the container a step is three processes deep: the runner (the launched
// exec's own process, which waits for the step, records its end and reaps),
// the step in a session and process group of its own (setsid: Cancel kills
// that group, never the runner), and whatever the step starts. Where the
// image has perl (Debian-based images do) the runner is one perl process
// that makes itself the child subreaper, so that no process of the step is
// ever orphaned to the container's PID 1: postgres' postmaster treats any
// child it reaps that did not exit 0 or 1 as a crashed backend and restarts
// every session. Elsewhere it is a shell script, which keeps the same state
// and forks more.
//
// It knows the Docker driver, not engines nor the Kubernetes API.
package step

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Step is one command to run in a container, detached.
type Step struct {
	// ID names the step for people and in the container's paths: lower-case
	// letters, digits and dashes, at most 40 ("seed", "data-restore").
	ID string
	// Argv is the command; Env is added to its environment (secrets go here,
	// never in Argv, which process listings show). The step finds the file it
	// may write its progress to in STEP_PROGRESS: it appends lines, the last
	// one is its progress.
	Argv []string
	Env  map[string]string
	// Supersedes: starting it cancels the steps of its ID still running in
	// the container and removes those ended: one at a time, the latest wins
	// (a data operation, whose new request replaces the one before).
	Supersedes bool
	// Output: its state, once Done, carries the tail of its output (State.Out):
	// what it answers besides its exit code (a listing).
	Output bool
}

// Key tells a step from any other: its ID and a hash of its command and
// environment. A step is started at most once per container and key.
type Key string

var idPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$`)

// Key is s's key: <ID>-<16 hex digits>. The hash covers Env too (a secret
// only as a hash, in a container that holds the secret anyway).
func (s Step) Key() Key {
	h := sha256.New()
	for _, a := range s.Argv {
		_, _ = fmt.Fprintf(h, "a%d:%s\x00", len(a), a) // a hash never fails to write
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		_, _ = fmt.Fprintf(h, "e%d:%s=%s\x00", len(k), k, s.Env[k])
	}
	return Key(s.ID + "-" + hex.EncodeToString(h.Sum(nil))[:16])
}

var keyPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?-[0-9a-f]{16}$`)

// valid says why k cannot name a step directory, or nil: it goes into a path.
func (k Key) valid() error {
	if !keyPattern.MatchString(string(k)) {
		return fmt.Errorf("invalid step key %q", k)
	}
	return nil
}

// Phase is where a step is.
type Phase string

const (
	// Absent: the container holds no such step (never started, or forgotten).
	Absent Phase = "Absent"
	// Running: started and not ended (a Cancel may be stopping it).
	Running Phase = "Running"
	// Done: it exited 0.
	Done Phase = "Done"
	// Failed: it exited non-zero, or its runner vanished without recording
	// its end (killed, its container restarted): Message says which.
	Failed Phase = "Failed"
	// Cancelled: Cancel stopped it before it ended.
	Cancelled Phase = "Cancelled"
)

// State is a step as its container records it.
type State struct {
	Key   Key
	Phase Phase
	// Elapsed is how long it has run (Running) or ran (ended), by the
	// container's clock, so that the manager's does not matter.
	Elapsed time.Duration
	// Progress is the last line the step wrote to its progress file:
	// untrusted text (a tenant's script may write it), bounded, with no
	// control characters.
	Progress string
	// ProgressFor is how long ago Progress was written (the container's
	// clock): how long the part it names has run.
	ProgressFor time.Duration
	// ExitCode is the step's exit code once ended (-1 when its runner vanished).
	ExitCode int
	// Message says why a step Failed or was Cancelled: the last line of its
	// output (untrusted, bounded, as Progress), or what became of its runner.
	Message string
	// Out is the tail of a Done step's output when the step asked for it
	// (Step.Output; a state read later carries it anyway): untrusted, at most
	// MaxOut bytes, from a whole line.
	Out string
	// Earlier: Start found its key started before (by any runner, a manager
	// before this one): the state is that run's, not one of this Start.
	Earlier bool
}

// Ended says the step will change no more.
func (s State) Ended() bool { return s.Phase == Done || s.Phase == Failed || s.Phase == Cancelled }

func (s Step) valid() error {
	if !idPattern.MatchString(s.ID) {
		return fmt.Errorf("invalid step ID %q: want lower-case letters, digits and dashes, at most 40", s.ID)
	}
	if len(s.Argv) == 0 {
		return fmt.Errorf("step %s has no command", s.ID)
	}
	return nil
}

// id is the ID of the step k is the key of.
func (k Key) id() string { return string(k[:max(0, strings.LastIndex(string(k), "-"))]) }
