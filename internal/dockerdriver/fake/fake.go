// Package fake is an in-memory dockerdriver.Driver for fast controller
// tests, with fault injection. It passes the same contract suite
// (drivertest.RunContract) as the real driver.
//
// What it models: images (local and in a registry, with declared volumes),
// shared pulls with progress and timeout, containers and their lifecycle
// (created, running, exited), renames, name conflicts and adoption, anonymous
// volumes, networks and aliases, exec, logs, lifecycle events with drops
// and resyncs, and Docker's error kinds and messages.
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
	"errors"
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
	VerbExec: "exec", VerbLogsTail: "logs", VerbRemove: "remove", VerbRename: "rename", VerbEvents: "events",
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

// Calls returns how many times verb was called.
func (f *Driver) Calls(verb Verb) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[verb]
}

// TotalCalls returns how many driver calls were made, all verbs together:
// a controller in steady state should make none.
func (f *Driver) TotalCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		n += c
	}
	return n
}

// ResetCalls zeroes the call counts.
func (f *Driver) ResetCalls() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.calls)
}

// Fault makes calls fail or wait.
type Fault struct {
	// Verb selects the method ("": every method). Faults never apply to
	// Events: use DropEvents.
	Verb Verb
	// Ref restricts the fault to calls about this image reference,
	// container name or container ID ("": any).
	Ref string
	// Delay is waited first (the caller's ctx can cut it short).
	Delay time.Duration
	// Err, if set, is then returned. Sentinels such as dd.ErrUnavailable
	// are wrapped into a *dd.Error naming the operation, as the real
	// driver's errors are; a *dd.Error is returned as it is.
	Err error
	// Times is how many calls it applies to (0: until cleared).
	Times int
	// AtStart makes the fault hit CreateContainer after the container is
	// created: starting it fails with Err and the container is removed
	// again, as the real driver does when the daemon refuses to start it
	// (the events are create, then destroy). Delay does not apply.
	AtStart bool
}

type fault struct {
	Fault
	left int // remaining applications when Times > 0
}

// Inject adds a fault; clear removes it.
func (f *Driver) Inject(ft Fault) (clear func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := &fault{Fault: ft, left: ft.Times}
	f.faults = append(f.faults, e)
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for i, x := range f.faults {
			if x == e {
				f.faults = append(f.faults[:i], f.faults[i+1:]...)
				return
			}
		}
	}
}

// ClearFaults removes every fault and exec rule.
func (f *Driver) ClearFaults() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = nil
	f.execRules = nil
}

// enter counts a call and applies the first matching fault. refs are the
// names the call is about (the argument, and the resolved container's
// name and ID when known). A Delay is cut short by the verb's deadline, as
// the real driver's calls are (dd.Bound).
func (f *Driver) enter(ctx context.Context, verb Verb, refs ...string) error {
	budget := f.callTimeout
	switch verb {
	case VerbCreateContainer:
		budget = 2 * f.callTimeout
	case VerbPullImage, VerbExec, VerbEvents:
		budget = 0 // their own timeouts
	}
	return f.enterWithin(ctx, verb, budget, refs...)
}

func (f *Driver) enterWithin(ctx context.Context, verb Verb, budget time.Duration, refs ...string) error {
	f.mu.Lock()
	f.calls[verb]++
	ft := f.matchFault(verb, refs, false)
	f.mu.Unlock()
	ref := ""
	if len(refs) > 0 {
		ref = refs[0]
	}
	if ft == nil {
		if err := ctx.Err(); err != nil {
			return dd.NewError(ops[verb], ref, kindOfCtx(err), err)
		}
		return nil
	}
	if ft.Delay > 0 {
		bctx, cancel, expired := dd.Bound(ctx, budget)
		defer cancel()
		t := time.NewTimer(ft.Delay)
		defer t.Stop()
		select {
		case <-bctx.Done():
			return expired(dd.NewError(ops[verb], ref, kindOfCtx(bctx.Err()), bctx.Err()), ops[verb], ref)
		case <-t.C:
		}
	}
	if ft.Err == nil {
		return nil
	}
	return faultError(ops[verb], ref, ft.Err)
}

// faultError is a fault's error as the real driver would return it for op.
func faultError(op, ref string, err error) error {
	var de *dd.Error
	if errors.As(err, &de) {
		return err
	}
	e := &dd.Error{Op: op, Ref: ref, Err: err}
	for _, k := range []error{dd.ErrNotFound, dd.ErrConflict, dd.ErrTimeout, dd.ErrUnavailable, dd.ErrPullFailed, dd.ErrInvalid} {
		if errors.Is(err, k) {
			e.Kinds = append(e.Kinds, k)
		}
	}
	return e
}

func kindOfCtx(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return dd.ErrTimeout
	}
	return nil
}

// matchFault finds the first fault for verb about refs, at entry or (atStart)
// at a created container's start. Callers hold f.mu.
func (f *Driver) matchFault(verb Verb, refs []string, atStart bool) *Fault {
	if verb == VerbEvents {
		return nil
	}
	for i, ft := range f.faults {
		if ft.Verb != "" && ft.Verb != verb || ft.AtStart != atStart {
			continue
		}
		if ft.Ref != "" && !contains(refs, ft.Ref) {
			continue
		}
		out := ft.Fault
		if ft.Times > 0 {
			ft.left--
			if ft.left == 0 {
				f.faults = append(f.faults[:i], f.faults[i+1:]...)
			}
		}
		return &out
	}
	return nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
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
