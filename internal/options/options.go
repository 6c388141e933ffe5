package options

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// Options are the operator's settings for every Sandbox (the manager's flags).
type Options struct {
	// Instance names this control plane on the Docker host (label
	// sandbox.roboco.io/instance). Containers of another instance are never judged
	// stale or orphaned by this one: their UIDs belong to another API server.
	// Empty: Setup derives it from the cluster's identity (ClusterInstance).
	Instance string
	// LegacyInstances are earlier names of this control plane on the Docker host
	// (e.g. "default", the instance of releases before it was derived): their
	// containers are judged stale or orphaned as this instance's own are. A
	// container whose UID is a live Sandbox's is adopted whatever its instance.
	LegacyInstances []string
	// Images overrides the engine registry's images, by engine name.
	Images map[string]engine.Images
	// DefaultNetwork is the Docker network services join when spec.network is empty
	// ("" is Docker's default bridge, where agents reach services by IP).
	DefaultNetwork string
	// AllowedNetworks are the Docker networks spec.network may name besides
	// DefaultNetwork (always allowed). None: the default network only. A Sandbox's
	// author holds a superuser in its services, so which networks they can reach
	// is the operator's choice.
	AllowedNetworks []string
	// OwnerTemplate names the default owner container; {agentID} is replaced.
	OwnerTemplate string
	// GracePeriod is how long an owner may be missing when spec.owner.gracePeriod is unset.
	GracePeriod time.Duration
	// ResyncPeriod is how often a settled Sandbox is looked at again (jittered);
	// Docker events make it the backstop, not the mechanism.
	ResyncPeriod time.Duration
	// SweepInterval is how often the orphan sweep runs (jittered); Docker events and
	// Sandbox deletions trigger it in between.
	SweepInterval time.Duration
	// SweepSelector are labels a container must carry, besides roboco.sandbox=1, for
	// the orphan sweep to judge it (none: every sandbox container on the host). It
	// scopes the sweep when several control planes share one Docker host, each of
	// which would otherwise take the others' containers for orphans.
	SweepSelector map[string]string
	// StopTimeout is how long a container gets between SIGTERM and SIGKILL on teardown.
	StopTimeout time.Duration
	// PidsLimit caps the processes of each service container.
	PidsLimit int64
	// DefaultMemory and DefaultCPU apply when a service sets none; MaxMemory and
	// MaxCPU are the most a service may ask for.
	DefaultMemory, MaxMemory resource.Quantity
	DefaultCPU, MaxCPU       resource.Quantity
	// ProbeDeadlines overrides engines' readiness deadlines, by engine name (slow hosts).
	ProbeDeadlines map[string]time.Duration
	// UpdateStrategy is when a running container behind the operator's settings
	// is replaced, for a Sandbox that sets no spec.updateStrategy.
	UpdateStrategy sandboxv1.UpdateStrategyType
	// PoolRefills bounds the warm pool members being created at once, across
	// pools, so refills leave the Docker daemon to claims and cold Sandboxes
	// (0: 2).
	PoolRefills int
	// Versions are the engine versions offered besides the default images
	// (engine → version → its images); DefaultVersions name the version the
	// default images are (engine → version; none: "default"). A service picks
	// one with spec.services[].version.
	Versions        map[string]map[string]engine.Images
	DefaultVersions map[string]string
	// InitScriptTimeout bounds each init script of a service (0: 60s);
	// InitMaxBytes bounds the scripts one service runs, together (0: 1 MiB);
	// InitMaxScripts the keys of one init source (0: 64); InitMaxTimeout
	// the whole seed's time a service may ask (init.timeout; 0: 30m). See
	// InitBounds.
	InitScriptTimeout time.Duration
	InitMaxBytes      int64
	InitMaxScripts    int
	InitMaxTimeout    time.Duration
	// SeedLanes bounds the seeds running at once on a Docker host, and
	// SeedLanesPerNamespace those of one namespace there (0: the defaults of
	// internal/lanes, 4 and 2); waiting namespaces take turns.
	SeedLanes             int
	SeedLanesPerNamespace int
	// MaxCheckpoints is how many named checkpoints a service keeps at most,
	// and by default (spec.services[].maxCheckpoints; 0: 32). See Checkpoints.
	MaxCheckpoints int
	// CheckpointsRelist is how often a service holding checkpoints has its
	// container list them again (0: a minute), so that status.checkpoints
	// drops one the agent removed in the container.
	CheckpointsRelist time.Duration
}

// DefaultOptions are the manager's defaults.
func DefaultOptions() Options {
	return Options{
		OwnerTemplate: "roboco-agent-{agentID}",
		GracePeriod:   180 * time.Second,
		ResyncPeriod:  10 * time.Minute,
		SweepInterval: 60 * time.Second,
		StopTimeout:   5 * time.Second,
		PidsLimit:     512,
		DefaultMemory: resource.MustParse("512Mi"),
		MaxMemory:     resource.MustParse("4Gi"),
		DefaultCPU:    resource.MustParse("1"),
		MaxCPU:        resource.MustParse("4"),
		// Note: the operator's changes never wipe a running sandbox's data unless asked.
		UpdateStrategy: sandboxv1.UpdateOnDelete,
		PoolRefills:    2,
		// Note: a script past its deadline is killed and fails its service.
		InitScriptTimeout: 60 * time.Second,
		InitMaxBytes:      1 << 20,
		InitMaxScripts:    64,
		InitMaxTimeout:    30 * time.Minute,
		MaxCheckpoints:    DefaultMaxCheckpoints,
	}
}

// Validate reports every setting that cannot work, all at once (errors.Join),
// saying what is allowed. It is the one rulebook for these fields: the manager's
// flags only parse into them. Messages name the manager's flags (--instance,
// --max-memory, ...), since that is how operators set these fields; a Go caller
// reads the same words.
func (o Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	// Note: an empty instance is derived by Setup.
	if msgs := validation.IsValidLabelValue(o.Instance); len(msgs) > 0 {
		bad("--instance %q must be a label value: 1-63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit", o.Instance)
	}
	for _, legacy := range o.LegacyInstances {
		if msgs := validation.IsValidLabelValue(legacy); legacy == "" || len(msgs) > 0 {
			bad("--legacy-instances: %q must be a label value: 1-63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit", legacy)
		}
	}
	o.validateImages(bad)
	o.validateVersions(bad)
	if !strings.Contains(o.OwnerTemplate, "{agentID}") {
		bad("--owner-template %q must contain {agentID}, e.g. roboco-agent-{agentID}", o.OwnerTemplate)
	}
	for _, d := range []struct {
		flag  string
		value time.Duration
	}{{"stop-timeout", o.StopTimeout}, {"grace-period", o.GracePeriod}, {"resync-period", o.ResyncPeriod}, {"sweep-interval", o.SweepInterval}} {
		if d.value <= 0 {
			bad("--%s must be a positive duration such as 30s or 5m, not %s", d.flag, d.value)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(o.ProbeDeadlines)) {
		if _, ok := engine.Lookup(name); !ok {
			bad("--probe-deadline: unknown engine %q (engines: %s)", name, strings.Join(engine.Names(), ", "))
		} else if d := o.ProbeDeadlines[name]; d <= 0 {
			bad("--probe-deadline %s=%s: want a positive duration such as 90s or 2m", name, d)
		}
	}
	o.validateNetworks(bad)
	o.validateResources(bad)
	o.validateInit(bad)
	o.validateCheckpoints(bad)
	if o.UpdateStrategy != sandboxv1.UpdateOnDelete && o.UpdateStrategy != sandboxv1.UpdateRollingUpdate {
		bad("--update-strategy %q: want %s or %s", o.UpdateStrategy, sandboxv1.UpdateOnDelete, sandboxv1.UpdateRollingUpdate)
	}
	return errors.Join(errs...)
}

// dockerNetworkName is what a Docker network's name may be (the CRD's rule for spec.network).
var dockerNetworkName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$`)

// reservedNetworks are Docker's own networks, which a service must never join:
// host and none give it no network of its own, and Docker's bridge takes no
// alias by name (an empty network means it).
var reservedNetworks = []string{"host", "none", "bridge"}

// validateNetworks reports networks that a service cannot join.
func (o Options) validateNetworks(bad func(format string, args ...any)) {
	if o.DefaultNetwork != "" && slices.Contains(reservedNetworks, o.DefaultNetwork) {
		bad("--default-network %q: leave it empty for Docker's default bridge; host and none cannot be used", o.DefaultNetwork)
	} else if o.DefaultNetwork != "" && !dockerNetworkName.MatchString(o.DefaultNetwork) {
		bad("--default-network %q must be a Docker network name: letters, digits, '_', '.' and '-', starting with a letter or digit", o.DefaultNetwork)
	}
	for _, n := range o.AllowedNetworks {
		switch {
		case slices.Contains(reservedNetworks, n):
			bad("--allowed-networks: %q cannot be allowed: Sandboxes may join only user-defined networks (%s are refused)", n, strings.Join(reservedNetworks, ", "))
		case !dockerNetworkName.MatchString(n):
			bad("--allowed-networks: %q must be a Docker network name: letters, digits, '_', '.' and '-', starting with a letter or digit", n)
		}
	}
}

// Network is the Docker network a Sandbox's services join: the default when
// spec.network is empty, else spec.network when the operator allows it.
func (o Options) Network(requested string) (string, error) {
	if requested == "" || requested == o.DefaultNetwork || slices.Contains(o.AllowedNetworks, requested) {
		return cmp.Or(requested, o.DefaultNetwork), nil
	}
	allowed := slices.Clone(o.AllowedNetworks)
	if o.DefaultNetwork != "" {
		allowed = append([]string{o.DefaultNetwork}, allowed...)
	}
	if len(allowed) == 0 {
		return "", fmt.Errorf("network %q is not allowed: this manager allows only Docker's default bridge (leave spec.network empty); the operator allows more with --allowed-networks", requested)
	}
	return "", fmt.Errorf("network %q is not allowed; allowed: %s, or leave spec.network empty for %s (the operator allows more with --allowed-networks)",
		requested, strings.Join(allowed, ", "), cmp.Or(o.DefaultNetwork, "Docker's default bridge"))
}

// MinCPU is Docker's smallest CPU limit: runc refuses a CFS quota under 1ms per
// 100ms period, at start, after create has succeeded.
var MinCPU = resource.MustParse("10m")

// validateResources reports limits Docker refuses or that contradict each other.
func (o Options) validateResources(bad func(format string, args ...any)) {
	// Docker refuses a memory limit under 6Mi.
	if o.DefaultMemory.Value() < host.MinMemoryBytes {
		bad("--default-memory %s is below Docker's minimum of 6Mi", o.DefaultMemory.String())
	}
	if o.MaxMemory.Sign() <= 0 {
		bad("--max-memory must be a positive quantity such as 4Gi, not %s", o.MaxMemory.String())
	} else if o.DefaultMemory.Cmp(o.MaxMemory) > 0 {
		bad("--default-memory %s exceeds --max-memory %s", o.DefaultMemory.String(), o.MaxMemory.String())
	}
	if o.DefaultCPU.Cmp(MinCPU) < 0 {
		bad("--default-cpu must be at least 10m (Docker's smallest CPU limit), such as 1 or 500m, not %s", o.DefaultCPU.String())
	}
	if o.MaxCPU.Cmp(MinCPU) < 0 {
		bad("--max-cpu must be at least 10m (Docker's smallest CPU limit), such as 4 or 1500m, not %s", o.MaxCPU.String())
	} else if o.DefaultCPU.Cmp(o.MaxCPU) > 0 {
		bad("--default-cpu %s exceeds --max-cpu %s", o.DefaultCPU.String(), o.MaxCPU.String())
	}
	if o.PoolRefills < 0 || o.PoolRefills > 64 {
		bad("--pool-refills must be 1 to 64 (0: the default, 2), not %d", o.PoolRefills)
	}
	if o.PidsLimit < 1 {
		bad("--pids-limit must be at least 1, not %d", o.PidsLimit)
	}
}

// ProbeDeadline is how long after start a service of e may take to answer.
func (o Options) ProbeDeadline(e engine.Engine) time.Duration {
	if d, ok := o.ProbeDeadlines[e.Name()]; ok && d > 0 {
		return d
	}
	return e.ProbeDeadline()
}

// RollsOut says whether sb's containers behind the operator's settings are replaced.
func (o Options) RollsOut(sb *sandboxv1.Sandbox) bool {
	strategy := sb.Spec.UpdateStrategy
	if strategy == "" {
		strategy = o.UpdateStrategy
	}
	return strategy == sandboxv1.UpdateRollingUpdate
}

// ownerContainer is the owner container name a Sandbox gets by default.
func (o Options) ownerContainer(agentID string) string {
	return strings.ReplaceAll(o.OwnerTemplate, "{agentID}", agentID)
}

// Judges says whether containers labelled with instance are this control plane's
// to judge: made under its instance or under one of its legacy names.
func (o Options) Judges(instance string) bool {
	return instance == o.Instance || slices.Contains(o.LegacyInstances, instance)
}

// OwnerName is the owner container of sb: its spec's, else the template's.
func (o Options) OwnerName(sb *sandboxv1.Sandbox) string {
	if sb.Spec.Owner != nil && sb.Spec.Owner.ContainerName != "" {
		return sb.Spec.Owner.ContainerName
	}
	return o.ownerContainer(sb.Spec.AgentID)
}

// TrackedOwner is the owner container whose life sb follows; false when owner
// tracking is off (owner.policy None).
func (o Options) TrackedOwner(sb *sandboxv1.Sandbox) (string, bool) {
	if sb.Spec.Owner != nil && sb.Spec.Owner.Policy == sandboxv1.OwnerPolicyNone {
		return "", false
	}
	return o.OwnerName(sb), true
}
