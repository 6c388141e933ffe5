// Package engine describes the database engines a Sandbox can run: images, container
// settings, readiness probes, feature activation and the ROBOCO_TEST_* variables each
// publishes. It is pure data and string building: it knows nothing of Docker or
// Kubernetes, so the CRD, the reconciler, teardown and the sweep can all iterate it.
//
// Adding an engine is one type implementing Engine plus one line in registry.
package engine

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Engine is one database engine.
type Engine interface {
	// Name is the engine's API name (spec.services[].engine).
	Name() string
	// Slug names the container: roboco-sandbox-<slug>-<agentID>.
	Slug() string
	// Images are the default images; the operator may override them.
	Images() Images
	// Port is the TCP port the service listens on inside its container.
	Port() int
	// Tmpfs maps in-container paths to tmpfs mount options: data never touches disk.
	Tmpfs() map[string]string
	// Features is the allowlist of features this engine can activate.
	Features() []string
	// Container is how the engine's container is made for this password and
	// these features.
	Container(password string, features []string) Container
	// Probe is the readiness check, run inside the container against addr, the
	// container's own non-loopback address on its network.
	Probe(password, addr string) Step
	// ProbeDeadline is how long after start the service may take to answer its probe.
	ProbeDeadline() time.Duration
	// ActivateFeatures returns the steps that enable features after readiness; an error
	// names any feature outside the allowlist.
	ActivateFeatures(password, addr string, features []string) ([]Step, error)
	// VerifyFeatures returns a static step listing what is active, and a parser that maps
	// its stdout back to feature names.
	VerifyFeatures(password, addr string) (Step, func(stdout string) []string)
	// Publish returns the ROBOCO_TEST_* variables an agent uses to connect to host.
	Publish(host, password string) map[string]string
	// PasswordKey is the published variable that holds the password.
	PasswordKey() string
	// Rotate is one step, run inside the service container against addr (the container's own
	// non-loopback address), that makes newPassword the service's password and proves it: it passes only
	// when a login with newPassword works afterwards. It is idempotent and safe to repeat after a crash at
	// any point: it succeeds whether the service currently has oldPassword or already newPassword.
	// It also rewrites the engine's secret files (Container().Secrets) to hold newPassword, so nothing in
	// the container still carries the earlier password. The step holds no password: both, and the files'
	// new content, are added to its environment at run time (RotateEnv), so that it can be prepared ahead
	// in a warm member (dockerdriver.PrepareExec) and never shows them in argv.
	// A Step with a nil Argv means the engine cannot rotate, and so cannot be pooled.
	Rotate(addr string) Step
	// Init is how the engine runs its init scripts against addr as the
	// published user: the key suffix it runs, and a sh function body that runs
	// one script file ($1) and fails at its first error.
	Init(password, addr string) InitRunner
	// Data is how the engine resets, checkpoints and restores its data inside
	// its container, logged in as the published user.
	Data(password, addr string) DataRunner
}

// Images are an engine's light image and the kitchen-sink image any feature selects.
type Images struct {
	Default     string
	KitchenSink string
}

// For returns the image for a service requesting these features.
func (i Images) For(features []string) string {
	if len(features) > 0 && i.KitchenSink != "" {
		return i.KitchenSink
	}
	return i.Default
}

// Container is how an engine's container is made, apart from what the operator
// and the Sandbox decide (image, limits, network).
type Container struct {
	// Env is the environment; it never holds a password (docker inspect shows it).
	Env map[string]string
	// Cmd is the command (nil keeps the image's); it never holds a password.
	Cmd []string
	// Tmpfs maps in-container paths to tmpfs mount options.
	Tmpfs map[string]string
	// Secrets are files (path → content) written into the container before it
	// starts: the way the password reaches the image's entrypoint. The upstream
	// images read them through their *_FILE variables or a config file.
	Secrets map[string]string
	// CapAdd are the capabilities the image's entrypoint needs (it prepares its
	// data directory as root, then drops to its own user); every other one is dropped.
	CapAdd []string
}

// SecretsDir is where Secrets live, as Docker's own secrets do (/run/secrets).
const SecretsDir = "/run/secrets/"

// Capabilities an entrypoint needs to chown its data directory and switch to its
// user (gosu, su-exec, setpriv).
var dropToUserCaps = []string{"CHOWN", "SETGID", "SETUID"}

// Step is one command run inside a service container.
type Step struct {
	// Argv is the command; it never carries a password where the engine has another way.
	Argv []string
	// Env is the exec's own environment, the way secrets reach the command.
	Env map[string]string
	// Timeout bounds one run of the step.
	Timeout time.Duration
	// Expect, when set, must appear in stdout for the step to count as passed.
	Expect string
	// ConnectEnv names the variable of Env that bounds the command's
	// connection, in seconds (""; none): set from Timeout (Within), so that a
	// service slow to accept (a starved host) has most of the step's bound,
	// not a fixed few seconds of it.
	ConnectEnv string
}

// connectMargin is what a step's bound keeps beyond its connection's: the
// command's own work once connected.
const connectMargin = 2 * time.Second

// Within is s bounded by d, its connection (ConnectEnv) by d less
// connectMargin (at least a second).
func (s Step) Within(d time.Duration) Step {
	s.Timeout = d
	if s.ConnectEnv == "" {
		return s
	}
	env := make(map[string]string, len(s.Env)+1)
	for k, v := range s.Env {
		env[k] = v
	}
	env[s.ConnectEnv] = strconv.Itoa(max(1, int((d - connectMargin).Seconds())))
	s.Env = env
	return s
}

// Passed says whether a run of the step with this exit code and stdout succeeded.
func (s Step) Passed(exitCode int, stdout string) bool {
	return exitCode == 0 && (s.Expect == "" || strings.Contains(stdout, s.Expect))
}

// ContainerName is the deterministic, upstream-compatible name of a service container.
func ContainerName(e Engine, agentID string) string {
	return "roboco-sandbox-" + e.Slug() + "-" + agentID
}

// maxLabel is the longest DNS label. Resolvers refuse longer ones: glibc's
// getaddrinfo answers "Name or service not known" for a longer container name even
// though Docker accepts it and its DNS knows it.
const maxLabel = 63

// HostName is the name agents use to reach a service on a user-defined network: the
// container name when it is a valid DNS label, else a 63-character label made of
// its start and a hash of the whole name (stable, and distinct per agentID). The
// container carries it as a network alias.
func HostName(e Engine, agentID string) string {
	name := ContainerName(e, agentID)
	if len(name) <= maxLabel {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := "-" + hex.EncodeToString(sum[:])[:8]
	return name[:maxLabel-len(suffix)] + suffix
}

// ServiceNames are the names a service answers to on a user-defined network: its
// container name, and its HostName when that differs (a longer name's alias).
func ServiceNames(e Engine, agentID string) []string {
	name, alias := ContainerName(e, agentID), HostName(e, agentID)
	if alias == name {
		return []string{name}
	}
	return []string{name, alias}
}

// NewPassword returns 192 random bits, hex-encoded so it needs no quoting in URIs or shells.
func NewPassword() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating password: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// registry holds every engine, in the order they are reported.
var registry = []Engine{
	postgres{},
	redis{},
	mongo{},
}

// All returns every registered engine.
func All() []Engine { return slices.Clone(registry) }

// Names returns the registered engine names.
func Names() []string {
	names := make([]string, len(registry))
	for i, e := range registry {
		names[i] = e.Name()
	}
	return names
}

// Lookup returns the engine with this name.
func Lookup(name string) (Engine, bool) {
	for _, e := range registry {
		if e.Name() == name {
			return e, true
		}
	}
	return nil, false
}

// CheckFeatures returns an error naming every feature outside e's allowlist, and what is allowed.
func CheckFeatures(e Engine, features []string) error {
	var bad []string
	for _, f := range features {
		if !slices.Contains(e.Features(), f) {
			bad = append(bad, f)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	allowed := "none"
	if len(e.Features()) > 0 {
		allowed = strings.Join(e.Features(), ", ")
	}
	return fmt.Errorf("%s does not support feature(s) %s; allowed: %s", e.Name(), strings.Join(bad, ", "), allowed)
}

// Missing returns the requested features absent from active.
func Missing(requested, active []string) []string {
	var missing []string
	for _, f := range requested {
		if !slices.Contains(active, f) {
			missing = append(missing, f)
		}
	}
	return missing
}

// lines splits command output into trimmed, non-empty lines.
func lines(s string) []string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}
