// Package host is the per-service host layer: for one service on one Docker host it
// observes what exists, ensures the container (pull, create, start), probes and
// activates it, and removes it. It knows engines and the Docker driver, not the
// Kubernetes API: the reconciler decides, this layer acts and reports.
//
// A Host is an instance per Docker host (no package-level state), so a second Docker
// host, or another way to ensure a service (a warm pool's claim), is another instance
// or another method here, not a change to the reconciler.
package host

import (
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/host/step"
	"github.com/roboco-sandbox/sandbox-controller/internal/lanes"
)

// Host drives the services of one Docker host.
type Host struct {
	driver      dd.Driver
	stopTimeout time.Duration
	pulls       *Pulls
	creates     *creates
	judged      judgements
	warm        *Warm
	steps       *step.Runner
	started     started
	lanes       *lanes.Gate
	wakers      laneWakers
}

// New is the layer for the Docker host behind driver. stopTimeout is how long a
// container gets between SIGTERM and SIGKILL when removed; pulls runs the image
// pulls off the callers' goroutines. Seeds are admitted by lanes: the
// defaults of internal/lanes, or WithSeedLanes'.
func New(driver dd.Driver, stopTimeout time.Duration, pulls *Pulls, opts ...Option) *Host {
	h := &Host{driver: driver, stopTimeout: stopTimeout, pulls: pulls, creates: newCreates(), warm: NewWarm(), steps: step.New(driver, InlineStepWait)}
	seeds := SeedLanes{PerHost: lanes.DefaultPerHost, PerNamespace: lanes.DefaultPerNamespace}
	for _, o := range opts {
		o(&seeds)
	}
	h.lanes = newGate(seeds, &h.wakers)
	return h
}

// Option sets what New does not take as an argument.
type Option func(*SeedLanes)

// WithSeedLanes sets the caps of the host's seed lanes.
func WithSeedLanes(s SeedLanes) Option { return func(to *SeedLanes) { *to = s } }

// Warm is the host's index of claimable pool members.
func (h *Host) Warm() *Warm { return h.warm }

// Driver is the Docker host's driver, for what is not per service (lists by
// Sandbox, owner containers, the sweep).
func (h *Host) Driver() dd.Driver { return h.driver }

// Service is one service as it should run on the host, resolved by the caller from
// the Sandbox and the operator's settings.
type Service struct {
	Engine   engine.Engine
	Features []string
	// Network is the Docker network the service joins ("": the default bridge).
	Network  string
	Password string
	// ProbeDeadline is how long after start the service may take to answer.
	ProbeDeadline time.Duration
	// Container is the container to make, labels and fingerprint included (see
	// Fingerprint).
	Container dd.ContainerSpec
	// Chosen says which settings the Sandbox's spec chose itself; the others are
	// the operator's defaults. Images are the operator's images for the engine.
	// Both tell the Sandbox's changes from the operator's (Differences).
	Chosen Chosen
	Images engine.Images
	// Version is the engine version's name (spec's, or the operator's default's).
	Version string
	// Init are the init scripts to run once it answers (keys, under
	// engine.InitDir, in order), how long each may take, and all together.
	Init          []string
	InitPerScript time.Duration
	InitTimeout   time.Duration
	// Claims are the containers claimed from pools for this service: container ID
	// → CredentialsHash of the password each was rotated to (the claim record).
	Claims map[string]string
	// Hold keeps the running container whatever the Sandbox's spec changed
	// (its growth was refused): it is reported behind, never replaced.
	Hold bool
}

// Chosen says which of a service's settings its Sandbox set itself.
type Chosen struct{ Memory, CPU, Network bool }

// Image is the service's image reference.
func (s Service) Image() string { return s.Container.Image }

// MinMemoryBytes is the least memory limit Docker accepts for a container.
const MinMemoryBytes = 6 << 20
