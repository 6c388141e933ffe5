// Package class resolves what a service is to run as on a Docker host: its
// engine, image, limits, network, container and init scripts, for a Sandbox
// (Sandbox) and for a warm pool's members (Member) alike, so that a member's
// class matches the Sandboxes that claim it: the same operator settings, the
// same limits, the same container but for who it serves (its name and labels).
package class

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/options"
	"github.com/roboco-sandbox/sandbox-controller/internal/policy"
)

// Resolver resolves the services of one Docker host's Sandboxes and pools.
type Resolver struct {
	Options options.Options
	// Cache reads the SandboxPolicies (a service's networks); API reads the
	// init scripts, around the cache (only their metadata is watched).
	Cache, API client.Reader
	// Driver tells the host's CPU count, the ceiling of a service's cpu.
	Driver dd.Driver
	cpus   hostCPUs
	inits  initCache
}

// New is the resolver of the Docker host behind driver.
func New(o options.Options, cache, api client.Reader, driver dd.Driver) *Resolver {
	return &Resolver{Options: o, Cache: cache, API: api, Driver: driver}
}

// Service validates svc against the registry, the operator's limits and the
// Docker host's, and builds the container it needs in namespace on the network
// it asks ("": the default): no name, and of the labels only those of the
// class (engine, instance, features, credentials, version, init). Who it
// serves is added by Sandbox or Member. An InitError comes with the service
// as it is without its scripts, so that what runs of it can still be observed.
func (r *Resolver) Service(ctx context.Context, namespace, network string, svc sandboxv1.ServiceSpec, password string) (host.Service, error) {
	e, ok := engine.Lookup(string(svc.Engine))
	if !ok {
		return host.Service{}, fmt.Errorf("unknown engine %q; engines: %s", svc.Engine, strings.Join(engine.Names(), ", "))
	}
	features := FeatureStrings(svc.Features)
	// Note: the CRD already refused these; the engine checks again because the
	// allowlist is the security boundary.
	if err := engine.CheckFeatures(e, features); err != nil {
		return host.Service{}, err
	}
	memory, cpu, err := r.limits(ctx, e, svc.Resources)
	if err != nil {
		return host.Service{}, err
	}
	// Note: the namespace's SandboxPolicies, when any selects it, say which
	// networks it may use instead of --allowed-networks.
	allowed, err := policy.For(ctx, r.Cache, namespace)
	if err != nil {
		return host.Service{}, err
	}
	joined, err := allowed.Network(r.Options, network)
	if err != nil {
		return host.Service{}, err
	}
	images, err := r.Options.ImagesOf(e, svc.Version)
	if err != nil {
		return host.Service{}, err
	}
	spec := r.containerSpec(e, password, features, joined)
	spec.Image = images.For(features)
	// Note: the default asked for by name is the default: the same container.
	if svc.Version != "" && svc.Version != r.Options.DefaultVersion(e) {
		spec.Labels[host.LabelVersion] = svc.Version
	}
	spec.MemoryBytes, spec.NanoCPUs = memory, cpu
	initKeys, initTime, initErr := r.withInit(ctx, namespace, svc, e, &spec)
	if initErr != nil && !errors.As(initErr, new(InitError)) {
		return host.Service{}, initErr
	}
	chosen := host.Chosen{Network: network != ""}
	if res := svc.Resources; res != nil {
		chosen.Memory, chosen.CPU = res.Memory != nil, res.CPU != nil
	}
	return host.Service{Engine: e, Features: features, Network: joined, Password: password,
		ProbeDeadline: r.Options.ProbeDeadline(e), Container: spec, Chosen: chosen, Images: images,
		Init: initKeys, InitPerScript: r.Options.InitBounds().PerScript, InitTimeout: initTime, Version: cmp.Or(svc.Version, r.Options.DefaultVersion(e))}, initErr
}

// limits are the service's memory (bytes) and CPU (nano-CPUs) after the operator's
// defaults and maxima, within what Docker and the host accept.
func (r *Resolver) limits(ctx context.Context, e engine.Engine, res *sandboxv1.ServiceResources) (memoryBytes, nanoCPUs int64, err error) {
	memory, cpu := r.Options.DefaultMemory, r.Options.DefaultCPU
	if res != nil && res.Memory != nil {
		memory = *res.Memory
	}
	if res != nil && res.CPU != nil {
		cpu = *res.CPU
	}
	switch {
	case memory.Cmp(r.Options.MaxMemory) > 0:
		return 0, 0, fmt.Errorf("%s asks for memory %s; the most allowed is %s", e.Name(), memory.String(), r.Options.MaxMemory.String())
	case memory.Value() < host.MinMemoryBytes:
		return 0, 0, fmt.Errorf("%s asks for memory %s; Docker needs at least 6Mi", e.Name(), memory.String())
	}
	if err := r.checkCPU(ctx, e, cpu); err != nil {
		return 0, 0, err
	}
	return memory.Value(), cpu.MilliValue() * 1_000_000, nil
}

// checkCPU judges a cpu limit against Docker's floor, --max-cpu and the host's
// CPU count, and names the allowed range.
func (r *Resolver) checkCPU(ctx context.Context, e engine.Engine, cpu resource.Quantity) error {
	most, why := r.Options.MaxCPU, "--max-cpu"
	if n := r.cpus.ceiling(ctx, r.Driver, cpu.MilliValue()); n > 0 && most.Cmp(*resource.NewQuantity(int64(n), resource.DecimalSI)) > 0 {
		most, why = *resource.NewQuantity(int64(n), resource.DecimalSI), fmt.Sprintf("the Docker host has %d CPUs", n)
	}
	if cpu.Cmp(options.MinCPU) < 0 || cpu.Cmp(most) > 0 {
		return fmt.Errorf("%s asks for cpu %s; allowed: %s to %s (%s)", e.Name(), cpu.String(), options.MinCPU.String(), most.String(), why)
	}
	return nil
}

// Container logs are bounded: a chatty service must not fill the host's disk.
var containerLog = dd.LogLimits{MaxSize: "10m", MaxFiles: 2}

// secretMode makes a secret file readable by the image's own user (the
// entrypoint reads it after dropping root), as Docker's own secrets are.
const secretMode = 0o444

// containerSpec is the service's container without name, owner, limits and fingerprint.
func (r *Resolver) containerSpec(e engine.Engine, password string, features []string, network string) dd.ContainerSpec {
	made := e.Container(password, features)
	spec := dd.ContainerSpec{
		Labels: map[string]string{
			host.LabelEngine:   e.Name(),
			host.LabelInstance: r.Options.Instance,
			// Note: what Docker's record cannot show (the password is in a file).
			host.LabelCredentials: host.CredentialsHash(password),
			host.LabelFeatures:    host.FeaturesLabel(features),
		},
		Env:       made.Env,
		Cmd:       made.Cmd,
		Tmpfs:     made.Tmpfs,
		CapAdd:    made.CapAdd,
		Log:       containerLog,
		PidsLimit: r.Options.PidsLimit,
		Network:   network,
	}
	for _, path := range slices.Sorted(maps.Keys(made.Secrets)) {
		spec.Files = append(spec.Files, dd.File{Path: path, Mode: secretMode, Content: []byte(made.Secrets[path])})
	}
	return spec
}

// FeatureStrings are a service's features as the engines name them.
func FeatureStrings(fs []sandboxv1.Feature) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = string(f)
	}
	return out
}
