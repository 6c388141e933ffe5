// Package drivertest is the contract every dockerdriver.Driver must keep.
// RunContract runs it against an implementation; the real daemon
// (DockerFixture) and the fake both pass it, so the fake cannot drift from
// Docker.
package drivertest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// Config is what a subtest asks of the driver it gets.
type Config struct {
	// PullTimeout is the driver's pull timeout (0: its default).
	PullTimeout time.Duration
	// CallTimeout bounds the driver's calls whose ctx has no deadline (0: its default).
	CallTimeout time.Duration
}

// NewDriver returns a fresh driver and its environment for one subtest; it
// registers its own cleanup on t.
type NewDriver func(t *testing.T, cfg Config) (dockerdriver.Driver, Env)

// Env is what the contract needs besides the driver: a way to make
// containers behave, and the parts of the host the driver does not expose.
type Env interface {
	// Image is a locally present image that runs Command scripts and
	// declares VOLUME /data.
	Image() string
	// Command turns a script into a command for a container or an exec.
	Command(s Script) []string
	// Labels must be on every container the suite creates: cleanup finds
	// them by these.
	Labels() map[string]string
	// Network creates a user-defined network that lives until the test ends.
	Network(t *testing.T) string
	// RemoveNetwork removes a network Network made (with no container running on it).
	RemoveNetwork(t *testing.T, name string)
	// CreateNotStarted creates spec's container without starting it, as a
	// creator that crashed between create and start leaves it.
	CreateNotStarted(t *testing.T, spec dockerdriver.ContainerSpec)
	// ExecsRunning counts the processes in the container that run exactly cmd (an
	// exec's command), seen without the driver, whose Exec may refuse.
	ExecsRunning(t *testing.T, container string, cmd []string) int
	// VolumeExists reports whether the named volume exists.
	VolumeExists(t *testing.T, name string) bool
	// Disconnect cuts the driver off from the daemon, breaking its event
	// stream, as a daemon restart does; reconnect undoes it.
	Disconnect(t *testing.T) (reconnect func())
	// Stall makes the daemon accept calls and never answer them, as a wedged
	// daemon does; resume undoes it (also at cleanup).
	Stall(t *testing.T) (resume func())
	// Registry starts a registry, private to the test, that the driver can
	// pull from.
	Registry(t *testing.T) Registry
}

// Registry is an image registry under the test's control.
type Registry interface {
	// Push publishes Env.Image under a new reference that is not present
	// on the host, and returns it. Cleanup removes it from the host.
	Push(t *testing.T, name string) string
	// MissingTag returns a reference to a tag that does not exist, in a
	// repository that does.
	MissingTag(t *testing.T, name string) string
	// Pulls counts how many times the registry served ref's manifest.
	Pulls(ref string) int
	// Hold makes the registry hold requests for ref's manifest until
	// release is called (also called at cleanup).
	Hold(t *testing.T, ref string) (release func())
}

// Forever as Script.Sleep keeps the process running until it is stopped.
const Forever time.Duration = -1

// Script is a behaviour the contract asks of a container's main process or
// of an exec; each Env translates it into a command. Steps run in field order.
type Script struct {
	Stdout []string // lines written to stdout
	Stderr []string // then lines written to stderr
	// FillStdout then writes this many bytes of filler ("x\n" repeated) and "END\n".
	FillStdout int
	// EchoEnv then writes, for each name, the variable's value as a line.
	EchoEnv []string
	// Cat then writes the content of each file.
	Cat []string
	// Sleep then waits this long (Forever: until stopped, exiting 143 on SIGTERM).
	Sleep time.Duration
	// Exit is the exit code.
	Exit int
	// HoldsItself: first read the environment from stdin, as
	// dockerdriver.HoldRead does (a command for ExecSpec.HoldsItself).
	HoldsItself bool
}

// ShellCommand renders s for a POSIX shell (busybox sh will do).
func ShellCommand(s Script) []string {
	var parts []string
	if s.HoldsItself {
		parts = append(parts, dockerdriver.HoldRead)
	}
	for _, l := range s.Stdout {
		parts = append(parts, "echo "+shellQuote(l))
	}
	if len(s.Stdout) > 0 && len(s.Stderr) > 0 {
		// Docker copies the two streams concurrently: pause so that the log
		// records them in the order they were written.
		parts = append(parts, "sleep 0.1")
	}
	for _, l := range s.Stderr {
		parts = append(parts, "echo "+shellQuote(l)+" >&2")
	}
	if s.FillStdout > 0 {
		parts = append(parts, fmt.Sprintf("yes x | head -c %d", s.FillStdout), "echo END")
	}
	for _, name := range s.EchoEnv {
		parts = append(parts, fmt.Sprintf(`printf '%%s\n' "$%s"`, name))
	}
	for _, path := range s.Cat {
		parts = append(parts, "cat "+shellQuote(path))
	}
	switch {
	case s.Sleep == Forever:
		// sh as PID 1 ignores SIGTERM unless trapped; wait is interruptible.
		parts = append(parts, "trap 'exit 143' TERM", "sleep 86400 & wait $!")
	case s.Sleep > 0:
		parts = append(parts, "sleep "+strconv.FormatFloat(s.Sleep.Seconds(), 'f', 3, 64))
	}
	parts = append(parts, "exit "+strconv.Itoa(s.Exit))
	return []string{"sh", "-c", strings.Join(parts, "; ")}
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
