package sandbox

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/options"
	"github.com/roboco-sandbox/sandbox-controller/internal/policy"
)

// ResolveService validates a service against the registry, the operator's limits
// and the Docker host's, and builds the container it needs.
func (r *Reconciler) ResolveService(ctx context.Context, sb *sandboxv1.Sandbox, svc sandboxv1.ServiceSpec, password string) (host.Service, error) {
	e, ok := engine.Lookup(string(svc.Engine))
	if !ok {
		return host.Service{}, fmt.Errorf("unknown engine %q; engines: %s", svc.Engine, strings.Join(engine.Names(), ", "))
	}
	features := featureStrings(svc.Features)
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
	allowed, err := policy.For(ctx, r.Client, sb.Namespace)
	if err != nil {
		return host.Service{}, err
	}
	network, err := allowed.Network(r.Options, sb.Spec.Network)
	if err != nil {
		return host.Service{}, err
	}
	images, err := r.Options.ImagesOf(e, svc.Version)
	if err != nil {
		return host.Service{}, err
	}
	spec := r.containerSpec(sb, e, password, features, network)
	spec.Image = images.For(features)
	// Note: the default asked for by name is the default: the same container.
	if svc.Version != "" && svc.Version != r.Options.DefaultVersion(e) {
		spec.Labels[host.LabelVersion] = svc.Version
	}
	spec.MemoryBytes, spec.NanoCPUs = memory, cpu
	initKeys, err := r.withInit(ctx, sb.Namespace, svc, e, &spec)
	if err != nil {
		return host.Service{}, err
	}
	spec.Labels[host.LabelConfigHash] = host.Fingerprint(spec)
	chosen := host.Chosen{Network: sb.Spec.Network != ""}
	if res := svc.Resources; res != nil {
		chosen.Memory, chosen.CPU = res.Memory != nil, res.CPU != nil
	}
	perScript, _ := r.Options.InitLimits()
	return host.Service{Engine: e, Features: features, Network: network, Password: password,
		ProbeDeadline: r.Options.ProbeDeadline(e), Container: spec, Chosen: chosen, Images: images,
		Init: initKeys, InitPerScript: perScript, Version: cmp.Or(svc.Version, r.Options.DefaultVersion(e))}, nil
}

// ProveHost proves which Docker host the reconciler drives.
func (r *Reconciler) ProveHost(ctx context.Context) (dd.HostIdentity, error) {
	return r.Identity.Prove(ctx)
}

// limits are the service's memory (bytes) and CPU (nano-CPUs) after the operator's
// defaults and maxima, within what Docker and the host accept.
func (r *Reconciler) limits(ctx context.Context, e engine.Engine, res *sandboxv1.ServiceResources) (memoryBytes, nanoCPUs int64, err error) {
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
func (r *Reconciler) checkCPU(ctx context.Context, e engine.Engine, cpu resource.Quantity) error {
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

// containerSpec is the service's container without limits and fingerprint.
func (r *Reconciler) containerSpec(sb *sandboxv1.Sandbox, e engine.Engine, password string, features []string, network string) dd.ContainerSpec {
	name := engine.ContainerName(e, sb.Spec.AgentID)
	made := e.Container(password, features)
	spec := dd.ContainerSpec{
		Name:  name,
		Image: r.Options.ImagesFor(e).For(features),
		Labels: map[string]string{
			host.LabelSandbox:   host.LabelSandboxTrue,
			host.LabelOwner:     r.ownerName(sb),
			host.LabelNamespace: sb.Namespace,
			host.LabelName:      sb.Name,
			host.LabelUID:       string(sb.UID),
			host.LabelEngine:    e.Name(),
			host.LabelInstance:  r.Options.Instance,
			// Note: what Docker's record cannot show (the password is in a file).
			host.LabelCredentials: host.CredentialsHash(password),
			host.LabelFeatures:    host.FeaturesLabel(features),
		},
		OwnerLabel: host.LabelUID,
		Env:        made.Env,
		Cmd:        made.Cmd,
		Tmpfs:      made.Tmpfs,
		CapAdd:     made.CapAdd,
		Log:        containerLog,
		PidsLimit:  r.Options.PidsLimit,
		Network:    network,
	}
	for _, path := range slices.Sorted(maps.Keys(made.Secrets)) {
		spec.Files = append(spec.Files, dd.File{Path: path, Mode: secretMode, Content: []byte(made.Secrets[path])})
	}
	if network != "" {
		spec.Aliases = engine.ServiceNames(e, sb.Spec.AgentID)
	}
	return spec
}

func featureStrings(fs []sandboxv1.Feature) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = string(f)
	}
	return out
}
