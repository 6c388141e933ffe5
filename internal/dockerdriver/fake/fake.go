// Package fake is an in-memory dockerdriver.Driver for fast controller
// tests, with fault injection. It passes the same contract suite
// (drivertest.RunContract) as the real driver.
//
// What it models: images (local and in a registry, with declared volumes),
// shared pulls with progress and timeout, containers and their lifecycle
// (created, running, exited), renames, name conflicts and adoption, anonymous
// volumes, networks and aliases, exec (one that timed out runs on, and makes
// its container busy until it ends), logs, lifecycle events with drops
// and resyncs, Docker's error kinds and messages, and a dead container whose
// removal Docker cannot finish (WedgeRemoval).
//
// What it deliberately does not model: real processes (a container runs a
// Script, or else runs until stopped; an exec runs a Script, or else exits
// 0 at once), resource enforcement (limits are recorded, never applied; only a
// CPU limit above the host's CPU count is refused at create, as Docker does),
// restart policies, pause, health checks, DNS, image layers and digests
// beyond counts, named volumes, daemon-side event history (a dropped stream
// loses its events), and the time a stop takes (Remove is instant).
package fake

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/flight"
)

// Verb names a Driver method, for call counts and faults.
type Verb string

const (
	VerbPing            Verb = "Ping"
	VerbImagePresent    Verb = "ImagePresent"
	VerbPullImage       Verb = "PullImage"
	VerbCreateContainer Verb = "CreateContainer"
	VerbInspect         Verb = "Inspect"
	VerbList            Verb = "List"
	VerbExec            Verb = "Exec"
	VerbPrepareExec     Verb = "PrepareExec"
	VerbExecDetached    Verb = "ExecDetached"
	VerbLogsTail        Verb = "LogsTail"
	VerbRemove          Verb = "Remove"
	VerbRename          Verb = "Rename"
	VerbEvents          Verb = "Events"
	VerbHostIdentity    Verb = "HostIdentity"
	VerbPlantIdentity   Verb = "PlantHostIdentity"
)

// ops is what each verb calls itself in error messages, as the real driver does.
var ops = map[Verb]string{
	VerbPing: "ping", VerbImagePresent: "image inspect", VerbPullImage: "pull",
	VerbCreateContainer: "create", VerbInspect: "inspect", VerbList: "list",
	VerbExec: "exec", VerbPrepareExec: "exec", VerbExecDetached: "exec", VerbLogsTail: "logs", VerbRemove: "remove", VerbRename: "rename", VerbEvents: "events",
	VerbHostIdentity: "host identity", VerbPlantIdentity: "plant host identity",
}

// Image is an image the fake knows, locally or in its registry.
type Image struct {
	// Volumes are the paths the image declares as VOLUME: every container
	// gets an anonymous volume for each, removed with it.
	Volumes []string
	// Env is the image's environment (default: a PATH, as Docker adds).
	Env []string
	// Layers and LayerSize shape the progress a pull reports (default 1
	// layer of 1 MiB).
	Layers    int
	LayerSize int64
}

// Volume is an anonymous volume.
type Volume struct {
	Name        string
	Container   string // ID of the container it belongs to
	Destination string
}

// Option configures the fake.
type Option func(*Driver)

// WithPullTimeout bounds each pull (default dd.DefaultPullTimeout).
func WithPullTimeout(d time.Duration) Option { return func(f *Driver) { f.pullTimeout = d } }

// DefaultCPUs is the fake host's CPU count unless WithCPUs says otherwise.
const DefaultCPUs = 4

// WithCPUs sets the host's CPU count (Ping's NCPU): a container asking for more
// NanoCPUs is refused at create, as Docker does.
func WithCPUs(n int) Option { return func(f *Driver) { f.cpus = n } }

// WithCallTimeout bounds each call whose caller set no deadline, as the real
// driver does (default dd.DefaultCallTimeout): a Delay fault longer than that is
// a daemon that does not answer in time.
func WithCallTimeout(d time.Duration) Option { return func(f *Driver) { f.callTimeout = d } }

// Driver is the in-memory driver. All methods are safe for concurrent use.
type Driver struct {
	pullTimeout time.Duration
	cpus        int
	callTimeout time.Duration

	mu            sync.Mutex
	images        map[string]Image // by normalized reference
	registry      map[string]Image
	registryPulls map[string]int
	holds         map[string]chan struct{} // closed on release
	pulls         flight.Group[dd.PullProgress]
	networks      map[string]bool
	containers    map[string]*ctr // by ID
	volumes       map[string]Volume
	subs          map[*sub]bool
	eventsDropped bool
	faults        []*fault
	execRules     []*execRule
	held          []*prepared // prepared execs not run or closed yet
	calls         map[Verb]int
	nextIP        int
	// daemonID and hostName are what the daemon says of itself; markers are the
	// identity markers planted, oldest first.
	daemonID, hostName string
	markers            []string
}

var _ dd.Driver = (*Driver)(nil)

// New returns an empty fake host with the default "bridge" network.
func New(opts ...Option) *Driver {
	f := &Driver{
		pullTimeout:   dd.DefaultPullTimeout,
		cpus:          DefaultCPUs,
		callTimeout:   dd.DefaultCallTimeout,
		images:        map[string]Image{},
		registry:      map[string]Image{},
		registryPulls: map[string]int{},
		holds:         map[string]chan struct{}{},
		networks:      map[string]bool{"bridge": true},
		containers:    map[string]*ctr{},
		volumes:       map[string]Volume{},
		subs:          map[*sub]bool{},
		calls:         map[Verb]int{},
		nextIP:        2,
		daemonID:      DefaultDaemonID,
		hostName:      "fake-host",
	}
	for _, o := range opts {
		o(f)
	}
	return f
}

// Ping answers as a Docker 20.10 daemon would, unless a fault says otherwise.
func (f *Driver) Ping(ctx context.Context) (dd.ServerInfo, error) {
	if err := f.enter(ctx, VerbPing); err != nil {
		return dd.ServerInfo{}, err
	}
	return dd.ServerInfo{APIVersion: "1.41", ServerVersion: "20.10.24-fake", MinAPIVersion: "1.12", OS: "linux", Arch: "amd64", NCPU: f.cpus}, nil
}

// AddNetwork creates a user-defined network.
func (f *Driver) AddNetwork(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.networks[name] = true
}

// RemoveNetwork deletes a network (containers keep their endpoint records).
func (f *Driver) RemoveNetwork(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.networks, name)
}

// Volumes lists the anonymous volumes that exist.
func (f *Driver) Volumes() []Volume {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Volume, 0, len(f.volumes))
	for _, v := range f.volumes {
		out = append(out, v)
	}
	return out
}

func randomID() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// noSuchContainer is Docker's own message.
func noSuchContainer(op, ref string) error {
	return dd.NewError(op, ref, dd.ErrNotFound, fmt.Errorf("Error response from daemon: No such container: %s", ref))
}
