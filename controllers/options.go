package controllers

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
)

// Options are the operator's settings for every Sandbox (the manager's flags).
type Options struct {
	// Instance names this control plane on the Docker host (label
	// sandbox.roboco.io/instance). Containers of another instance are never judged
	// stale or orphaned by this one: their UIDs belong to another API server.
	Instance string
	// Images overrides the engine registry's images, by engine name.
	Images map[string]engine.Images
	// DefaultNetwork is the Docker network services join when spec.network is empty
	// ("" is Docker's default bridge, where agents reach services by IP).
	DefaultNetwork string
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
}

// DefaultOptions are the manager's defaults.
func DefaultOptions() Options {
	return Options{
		Instance:      "default",
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
	}
}

// Validate reports settings that cannot work, naming what is allowed.
func (o Options) Validate() error {
	var errs []string
	for name := range o.Images {
		if _, ok := engine.Lookup(name); !ok {
			errs = append(errs, fmt.Sprintf("image override for unknown engine %q (engines: %s)", name, strings.Join(engine.Names(), ", ")))
		}
	}
	for name := range o.ProbeDeadlines {
		if _, ok := engine.Lookup(name); !ok {
			errs = append(errs, fmt.Sprintf("probe deadline for unknown engine %q (engines: %s)", name, strings.Join(engine.Names(), ", ")))
		}
	}
	if errs2 := validation.IsValidLabelValue(o.Instance); o.Instance == "" || len(errs2) > 0 {
		errs = append(errs, fmt.Sprintf("instance %q must be a non-empty label value (letters, digits, '-', '_', '.', at most 63)", o.Instance))
	}
	if !strings.Contains(o.OwnerTemplate, "{agentID}") {
		errs = append(errs, fmt.Sprintf("owner template %q must contain {agentID}", o.OwnerTemplate))
	}
	if o.GracePeriod <= 0 || o.ResyncPeriod <= 0 || o.StopTimeout <= 0 || o.SweepInterval <= 0 {
		errs = append(errs, "grace period, resync period, sweep interval and stop timeout must be positive")
	}
	if o.DefaultMemory.Cmp(o.MaxMemory) > 0 || o.DefaultCPU.Cmp(o.MaxCPU) > 0 {
		errs = append(errs, "default memory and CPU must not exceed the maxima")
	}
	if o.DefaultMemory.Value() < 6<<20 {
		errs = append(errs, "default memory must be at least 6Mi (Docker's minimum)")
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid options: %s", strings.Join(errs, "; "))
	}
	return nil
}

// imagesFor is the engine's images after the operator's overrides.
func (o Options) imagesFor(e engine.Engine) engine.Images {
	images := e.Images()
	if ov, ok := o.Images[e.Name()]; ok {
		if ov.Default != "" {
			images.Default = ov.Default
		}
		if ov.KitchenSink != "" {
			images.KitchenSink = ov.KitchenSink
		}
	}
	return images
}

// probeDeadline is how long after start a service of e may take to answer.
func (o Options) probeDeadline(e engine.Engine) time.Duration {
	if d, ok := o.ProbeDeadlines[e.Name()]; ok && d > 0 {
		return d
	}
	return e.ProbeDeadline()
}

// ownerContainer is the owner container name a Sandbox gets by default.
func (o Options) ownerContainer(agentID string) string {
	return strings.ReplaceAll(o.OwnerTemplate, "{agentID}", agentID)
}
