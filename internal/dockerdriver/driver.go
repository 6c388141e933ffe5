// Package dockerdriver runs and observes sandbox containers on one Docker host.
//
// It knows nothing of Kubernetes. A Driver is an instance per Docker host (no
// package-level state), every verb takes a context first and is idempotent:
// creating a container that already exists and is provably ours adopts it,
// removing an absent one succeeds. Errors are typed (see errors.go) and their
// text is never empty.
//
// Two implementations satisfy the contract suite in package drivertest:
// Docker (the real daemon, through github.com/moby/moby/client) and
// fake.Driver (in memory, with fault injection, for controller tests).
package dockerdriver

import (
	"context"
	"time"
)

// Driver is what the controller needs from a Docker host.
type Driver interface {
	// Ping checks that the daemon answers and reports its versions.
	Ping(ctx context.Context) (ServerInfo, error)

	// HostIdentity reads back the identity marker planted on the daemon (the
	// oldest, when several were planted at once), with the daemon's own ID and
	// name. No marker is an ErrNotFound error.
	HostIdentity(ctx context.Context) (HostIdentity, error)
	// PlantHostIdentity plants a marker carrying id. It never replaces one
	// already planted: HostIdentity goes on reading the oldest.
	PlantHostIdentity(ctx context.Context, id string) error

	// ImagePresent reports whether ref is present on the host.
	ImagePresent(ctx context.Context, ref string) (bool, error)
	// PullImage makes ref present: it returns at once when it already is,
	// otherwise it pulls under the driver's pull timeout. Concurrent calls for
	// one reference share a single pull; a caller whose ctx ends stops waiting
	// without cancelling the pull for the others. progress (may be nil) is
	// called once when the caller attaches to a pull and then on every
	// update, from the pull's goroutine: it must not block. It is not called
	// when the image is already present.
	PullImage(ctx context.Context, ref string, progress func(PullProgress)) error

	// CreateContainer creates and starts the container spec describes and
	// returns it as inspected. When a container of that name already exists
	// and carries spec.Labels[spec.OwnerLabel], it is adopted instead (and
	// started if it was created but never started); when the name is taken
	// by a container not proven ours, the error is a *ConflictError.
	CreateContainer(ctx context.Context, spec ContainerSpec) (Container, error)
	// Inspect returns one container by name or ID.
	Inspect(ctx context.Context, nameOrID string) (Container, error)
	// List returns the containers (in every state) carrying all the given labels.
	List(ctx context.Context, labels map[string]string) ([]ContainerSummary, error)
	// Exec runs a command in a running container and waits for it, at most
	// spec.Timeout.
	Exec(ctx context.Context, nameOrID string, spec ExecSpec) (ExecResult, error)
	// PrepareExec starts spec.Cmd in a running container but holds it back
	// until Run gives it the rest of its environment, so that a caller in a
	// hurry later pays no exec start. See PreparedExec. The start itself is
	// bounded by the driver's call deadline.
	PrepareExec(ctx context.Context, nameOrID string, spec ExecSpec) (PreparedExec, error)
	// ExecDetached starts spec.Cmd in a running container and returns its exec
	// ID at once, waiting for nothing: its output is discarded, and its end is
	// an EventExecDie (on streams that ask for them). It never makes the
	// container busy for Exec: running on is what it is for. spec.Timeout and
	// OutputLimit are unused; the start is bounded by the driver's call deadline.
	ExecDetached(ctx context.Context, nameOrID string, spec ExecSpec) (execID string, err error)
	// LogsTail returns the last lines of the container's stdout and stderr.
	LogsTail(ctx context.Context, nameOrID string, lines int) (string, error)
	// Remove stops the container (SIGTERM, then SIGKILL after stopTimeout)
	// and removes it together with its anonymous volumes. Absent is success.
	Remove(ctx context.Context, nameOrID string, stopTimeout time.Duration) error
	// Rename gives the container nameOrID the name newName and frees its old
	// one; its ID, labels, state and networks stay (a running container answers
	// to the new name on its networks at once). A newName held by another
	// container is a *ConflictError naming that one. Like Docker, it refuses
	// the container's current name (ErrInvalid): a retried rename that already
	// happened fails, so a caller in doubt should Inspect.
	Rename(ctx context.Context, nameOrID, newName string) error

	// Events streams container lifecycle events matching filter until ctx
	// ends, then closes the channel. The stream survives daemon restarts:
	// when it breaks (or its first connection fails) it sends an EventLost,
	// reconnects with backoff and then sends an EventResync, because events
	// may have been missed in between. The consumer must keep draining it.
	Events(ctx context.Context, filter EventFilter) <-chan Event
}

// DefaultPullTimeout bounds one image pull unless the driver is told otherwise.
const DefaultPullTimeout = 300 * time.Second

// DefaultExecTimeout bounds an Exec whose spec has no timeout.
const DefaultExecTimeout = 30 * time.Second

// DefaultOutputLimit is how many bytes of each exec stream Exec keeps (the tail).
const DefaultOutputLimit = 4096

// ServerInfo describes the daemon.
type ServerInfo struct {
	// APIVersion is the API version the driver talks (negotiated).
	APIVersion string
	// ServerVersion is the engine version, e.g. "20.10.24".
	ServerVersion string
	// MinAPIVersion is the oldest API version the daemon accepts.
	MinAPIVersion string
	OS, Arch      string
	// NCPU is how many CPUs the daemon's containers may use: the most a
	// container's NanoCPUs may ask for (Docker refuses more at create).
	NCPU int
	// MemTotal is the memory of the daemon's machine, in bytes.
	MemTotal int64
}

// HostIdentity is what identifies a Docker host.
type HostIdentity struct {
	// ID is the value of the marker planted on the host and read back from it.
	// It is what identifies the host: DaemonID and Name are for people.
	ID string
	// DaemonID is the daemon's own ID. It is not unique: Docker 20.10 derives it
	// from /etc/docker/key.json, which cloned machines and daemons sharing the
	// file have in common.
	DaemonID string
	// Name is the daemon's host name.
	Name string
	// Dial is which dial of the host's endpoint answered: a Switch counts its
	// re-dials (0 for a driver dialled once). A pass's proof holds for that
	// dial only (WithProof).
	Dial uint64
}

// PullProgress is a snapshot of one (possibly shared) image pull.
type PullProgress struct {
	Ref string
	// Shared is true for a caller that joined a pull another caller started.
	Shared bool
	// Layers is the number of layers seen so far; LayersDone of them are
	// complete (downloaded and extracted, or already present).
	Layers, LayersDone int
	// BytesDone and BytesTotal count the download of the layers whose size
	// is known so far.
	BytesDone, BytesTotal int64
	// Status is the latest status line, e.g. "Downloading".
	Status string
}

// ExecSpec is a command to run inside a container.
type ExecSpec struct {
	Cmd []string
	// Env is added to the container's environment for this command only:
	// pass secrets here, never in Cmd, which shows in process listings.
	Env map[string]string
	// Timeout bounds the command (0: DefaultExecTimeout). On timeout Exec
	// returns an ErrTimeout error; the process itself may keep running in
	// the container, as Docker has no way to kill an exec.
	Timeout time.Duration
	// KillAtTimeout kills the command in the container soon after its
	// timeout (within about a second: it runs under timeout(1), which the
	// image must have), so that one that hangs does not leave its container
	// busy (ErrBusy) for good.
	KillAtTimeout bool
	// OutputLimit is how many trailing bytes of each stream to keep
	// (0: DefaultOutputLimit).
	OutputLimit int
	// HoldsItself (PrepareExec only) says Cmd reads the environment Run
	// sends on stdin itself, as HoldRead does, before it does anything that
	// counts, and exits when stdin ends first: it starts at PrepareExec, so
	// what it does before reading (an interpreter's start) is not on Run's
	// path. Otherwise the driver holds Cmd in a shell that reads it.
	HoldsItself bool
}

// PreparedExec is a command started ahead in a container (PrepareExec) and held
// before it runs. The environment Run adds travels on the exec's stdin, never
// in its argv or its inspectable Env: pass secrets there. The container needs a
// POSIX sh. The held exec does not make the container busy (see Exec).
type PreparedExec interface {
	// Run adds env to the command's environment, lets it run and waits for it,
	// as Exec does; the spec's Timeout counts from Run. It runs once: a second
	// call is an ErrInvalid error. When the held command can no longer run (its
	// connection broke, its container stopped) the error is ErrNotRun; an exec
	// left running in the container refuses it as Exec is refused (ErrBusy).
	Run(ctx context.Context, env map[string]string) (ExecResult, error)
	// Launch is Run that waits at most wait for the command's end: ended
	// says it ended within it (res is then Run's). Otherwise it runs on as
	// ExecDetached's would: its end an EventExecDie, never a left exec that
	// makes the container busy; late, when not nil, may then be called once,
	// from another goroutine, with its result when it ends (a driver that
	// cannot tell never calls it: the caller reads the end another way too).
	// So a caller in a hurry pays no exec start and learns a fast command's
	// result at once, and a slower one's without another exec.
	Launch(ctx context.Context, env map[string]string, wait time.Duration, late func(ExecResult)) (res ExecResult, ended bool, err error)
	// Held says the command still waits for Run: it was neither run, closed,
	// nor lost with its connection or container.
	Held() bool
	// Close abandons a command that has not run: it ends without running.
	// It is harmless after Run, and may be called more than once.
	Close()
}

// ExecResult is a finished command.
type ExecResult struct {
	ExitCode int
	// Stdout and Stderr are the tails of the streams, at most OutputLimit bytes each.
	Stdout, Stderr string
	// Truncated reports that a stream was longer than the limit.
	Truncated bool
}

// EventFilter selects events. Empty fields match everything.
type EventFilter struct {
	// Labels must all be present with these values.
	Labels map[string]string
	// Names restricts events to containers of these names (or IDs).
	Names []string
	// ExecDie adds EventExecDie to the container lifecycle events. Off by
	// default: every exec (a probe too) ends with one, so a consumer that acts
	// on them must tell the execs it waits for from its own.
	ExecDie bool
}

// EventType is the kind of a container lifecycle event.
type EventType string

const (
	EventCreate  EventType = "create"
	EventStart   EventType = "start"
	EventDie     EventType = "die"
	EventOOM     EventType = "oom"
	EventDestroy EventType = "destroy"
	// EventPause and EventUnpause: `docker pause` froze the container, or
	// resumed it.
	EventPause   EventType = "pause"
	EventUnpause EventType = "unpause"
	// EventRename: the container was renamed; the event's Name is the new one.
	EventRename EventType = "rename"
	// EventExecDie: an exec in the container ended (Docker's "exec_die"); the
	// event carries the exec's ID and exit code. Only on streams whose filter
	// sets ExecDie.
	EventExecDie EventType = "exec_die"
	// EventLost says the stream broke (or could not connect at all): from
	// now until the EventResync that follows, events may be missed, so a
	// consumer must not act on the absence of events. Sent once per outage.
	EventLost EventType = "lost"
	// EventResync says the stream was interrupted and has reconnected:
	// events may have been lost, so the consumer should list again.
	EventResync EventType = "resync"
)

// Event is one container lifecycle event (or a lost or resync signal, which
// carries only Type and Time).
type Event struct {
	Type   EventType
	ID     string
	Name   string
	Labels map[string]string
	// ExitCode is set on die and exec_die events.
	ExitCode int
	// ExecID is set on exec_die events: the exec that ended.
	ExecID string
	// OldName is set on rename events: the name the container gave up.
	OldName string
	Time    time.Time
}
