package dockerdriver

import (
	"fmt"
	"time"
)

// ContainerSpec is what CreateContainer makes.
type ContainerSpec struct {
	Name  string
	Image string
	// Labels are set at creation; Docker cannot change them afterwards.
	Labels map[string]string
	// OwnerLabel names the label whose value proves that an existing
	// container of this name is ours, e.g. "sandbox.roboco.io/uid". It must be
	// set in Labels: nothing is ever adopted on the strength of a name alone.
	OwnerLabel string
	Env        map[string]string
	// Cmd overrides the image's command (empty: the image's own).
	Cmd []string
	// Tmpfs maps a mount path to its mount options ("" for the defaults),
	// e.g. "/var/lib/postgresql/data": "rw,size=256m".
	Tmpfs map[string]string
	// MemoryBytes limits memory (0: unlimited).
	MemoryBytes int64
	// NanoCPUs limits CPU in billionths of a CPU (0: unlimited).
	NanoCPUs int64
	// PidsLimit limits the number of processes (0: unlimited).
	PidsLimit int64
	// Network is the network to join ("": the daemon's default bridge),
	// Aliases the DNS names the container gets on it (user networks only).
	Network string
	Aliases []string

	// CapAdd are the only capabilities the container keeps: every other one is
	// dropped (CapDrop ALL), e.g. CHOWN, SETUID and SETGID for an entrypoint that
	// prepares its data directory as root and then drops to its own user.
	CapAdd []string
	// Files are written into the container after it is created and before it
	// starts: the way secrets reach it, since docker inspect shows Env and Cmd to
	// anyone who may use the Docker socket. Their contents are never logged.
	Files []File
	// Log bounds the container's log (json-file); zero values keep Docker's
	// defaults, which let a chatty service fill the host's disk.
	Log LogLimits
}

// File is one file of ContainerSpec.Files.
type File struct {
	// Path is absolute; missing parent directories are made (root, 0755). It must
	// not lie under a tmpfs mount, which would hide it.
	Path string
	// Mode is the file's permission bits; the file belongs to root.
	Mode    int64
	Content []byte
}

// String never shows the content.
func (f File) String() string {
	return fmt.Sprintf("%s (%d bytes, mode %o)", f.Path, len(f.Content), f.Mode)
}

// LogLimits bounds a container's json-file log: MaxFiles files of at most
// MaxSize each (Docker's size syntax, e.g. "10m").
type LogLimits struct {
	MaxSize  string
	MaxFiles int
}

// State is a container's lifecycle state, as Docker names it.
type State string

const (
	StateCreated    State = "created"
	StateRunning    State = "running"
	StatePaused     State = "paused"
	StateRestarting State = "restarting"
	StateRemoving   State = "removing"
	StateExited     State = "exited"
	StateDead       State = "dead"
)

// Alive says whether a container in state s is still its owner's: running, or
// frozen (paused) or brought back by Docker (restarting). Only one that exited,
// died, is being removed or is gone has left; one created and never started has
// not begun.
func (s State) Alive() bool {
	return s == StateRunning || s == StatePaused || s == StateRestarting
}

// Container is an inspected container.
type Container struct {
	ID   string
	Name string // without Docker's leading "/"
	// Image is the reference the container was created from; ImageID the
	// image it resolved to.
	Image   string
	ImageID string
	Labels  map[string]string

	State     State
	ExitCode  int
	OOMKilled bool
	// Error is the daemon's message when the container failed to start.
	Error                            string
	CreatedAt, StartedAt, FinishedAt time.Time // zero when it did not happen

	// Networks maps each network the container joined to its endpoint.
	Networks map[string]Endpoint
	// Mounts lists the container's mounts; anonymous volumes are
	// Type "volume" with a generated Name.
	Mounts []Mount

	// What the container was created with, as the daemon reports it.
	Env         []string // KEY=value, including the image's
	Cmd         []string
	Tmpfs       map[string]string
	MemoryBytes int64
	NanoCPUs    int64
	PidsLimit   int64
	// MemorySwapBytes is memory plus swap (equal to MemoryBytes: no swap).
	MemorySwapBytes int64
	CapAdd, CapDrop []string
	// LogDriver is the container's log driver; Log its json-file limits.
	LogDriver     string
	Log           LogLimits
	Privileged    bool
	SecurityOpt   []string
	RestartPolicy string
	// PublishedPorts lists host port bindings ("container/proto").
	PublishedPorts []string
}

// Endpoint is a container's attachment to one network.
type Endpoint struct {
	IPAddress string // empty unless running
	Aliases   []string
}

// Mount is one mount of a container.
type Mount struct {
	Type        string // "volume", "bind", "tmpfs"
	Name        string // volume name
	Destination string
}

// ContainerSummary is one entry of List.
type ContainerSummary struct {
	ID        string
	Name      string
	Image     string
	Labels    map[string]string
	State     State
	CreatedAt time.Time
}
