// Package fakedocker is a fake Docker daemon for scale benchmarks: a Server
// serves, over HTTP on a unix socket (or loopback TCP), the subset of the Docker
// Engine API that internal/dockerdriver calls, from memory, so that several
// managers in other processes can share fake hosts that answer at once. It
// counts what a benchmark needs (requests per endpoint, creates, and duplicate
// creates: two live containers for one Sandbox service) and can go down, come
// back with its state, or stall.
//
// What it models: images (local, imported identity markers, and pulls from an
// in-memory registry), containers and their lifecycle, names and their conflicts,
// networks and addresses, anonymous volumes, files copied in before start, logs,
// execs (held ones too) whose processes outlive a caller that stopped waiting,
// and the event stream with its filters and replay. Containers and execs run
// fake.Script commands (fake.Command); any other container command runs until
// stopped, and any other exec exits 0 at once with no output unless an ExecHook
// answers it (EngineAnswers answers the engines' probes and rotations).
//
// What it does not: real processes, resource limits (only a CPU limit above the
// host's count is refused, as Docker does), pause, restart policies, health
// checks, image layers, named volumes, and the endpoints the driver never calls.
package fakedocker

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"sync"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// APIVersion is the Engine API version the fake speaks: Docker 20.10's.
const APIVersion = "1.41"

// Image is an image the fake knows, present or pullable.
type Image struct {
	// Volumes are the paths the image declares as VOLUME: each container gets
	// an anonymous volume for each.
	Volumes []string
	// Env is the image's environment (default: a PATH, as images have).
	Env []string
}

// Option configures a Server.
type Option func(*Server)

// WithCPUs sets the host's CPU count (default 4).
// WithTLS serves TLS with cfg (over tcp: a daemon's --tlsverify socket).
func WithTLS(cfg *tls.Config) Option { return func(s *Server) { s.tls = cfg } }

func WithCPUs(n int) Option { return func(s *Server) { s.cpus = n } }

// WithDaemon sets the ID and name the daemon reports of itself (default: a
// random ID and "fakedocker").
func WithDaemon(id, name string) Option { return func(s *Server) { s.daemonID, s.hostName = id, name } }

// WithImage makes ref present on the host.
func WithImage(ref string, img Image) Option {
	return func(s *Server) { s.images[mustNormalize(ref)] = newImage(ref, img) }
}

// WithNetworks creates user-defined networks.
func WithNetworks(names ...string) Option {
	return func(s *Server) {
		for _, n := range names {
			s.networks[n] = true
		}
	}
}

// WithAnyNetwork makes every network exist, so that a benchmark need not create
// the managers' networks first.
func WithAnyNetwork() Option { return func(s *Server) { s.anyNetwork = true } }

// WithPullAny makes every reference pullable (an empty image), as a registry
// holding every engine image would.
func WithPullAny() Option { return func(s *Server) { s.pullAny = true } }

// WithExecHook answers execs before scripts do (see ExecHook).
func WithExecHook(h ExecHook) Option { return func(s *Server) { s.hook = h } }

// DuplicateKeys are the labels whose values, together, name one service: two
// live containers carrying the same values are a duplicate.
var DuplicateKeys = []string{host.LabelUID, host.LabelEngine}

// Server is one fake Docker daemon. Its methods are safe for concurrent use.
type Server struct {
	cpus   int
	tls    *tls.Config
	delays struct {
		sync.Mutex
		m map[string]time.Duration
	}
	daemonID, hostName string
	anyNetwork         bool
	pullAny            bool
	hook               ExecHook

	mu         sync.Mutex // guards the daemon's state
	containers map[string]*ctr
	names      map[string]*ctr          // by name
	services   map[string]map[*ctr]bool // by serviceKey
	images     map[string]*image
	registry   registry
	networks   map[string]bool
	volumes    map[string]string // anonymous volume → container ID
	execs      map[string]*execProc
	nextIP     int
	events     eventHub
	stats      counters

	serving listener
}

// New returns a daemon with no containers, the "bridge" network, and what opts add.
func New(opts ...Option) *Server {
	s := &Server{
		cpus:       4,
		daemonID:   randomID()[:48],
		hostName:   "fakedocker",
		containers: map[string]*ctr{},
		names:      map[string]*ctr{},
		services:   map[string]map[*ctr]bool{},
		images:     map[string]*image{},
		registry:   registry{refs: map[string]bool{}, imgs: map[string]Image{}, pulls: map[string]int{}, holds: map[string]chan struct{}{}},
		networks:   map[string]bool{"bridge": true},
		volumes:    map[string]string{},
		execs:      map[string]*execProc{},
		nextIP:     2,
		events:     eventHub{subs: map[*eventSub]bool{}},
		stats:      newCounters(),
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// AddNetwork creates a user-defined network.
func (s *Server) AddNetwork(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.networks[name] = true
}

// RemoveNetwork removes a user-defined network.
func (s *Server) RemoveNetwork(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.networks, name)
}

// VolumeExists reports whether the anonymous volume exists.
func (s *Server) VolumeExists(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.volumes[name]
	return ok
}

func randomID() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
