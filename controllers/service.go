package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
)

// part is one service's contribution to a condition: ok, or a reason and message.
type part struct {
	ok      bool
	reason  string
	message string
}

func okPart(reason string) part { return part{ok: true, reason: reason} }

// serviceResult is what one pass learned about one service.
type serviceResult struct {
	status                     sandboxv1.ServiceStatus
	images, containers, probes part
	// stalled: no retry can fix this without a change to the spec or the host.
	stalled bool
	// requeue is when the service wants another look (0: only on events and resync).
	requeue time.Duration
	// becameReady is set on the pass the service first answered.
	becameReady bool
	// events are milestones to report on the Sandbox.
	events []serviceEvent
}

type serviceEvent struct{ eventType, reason, message string }

func (res *serviceResult) after(d time.Duration) {
	if res.requeue == 0 || d < res.requeue {
		res.requeue = d
	}
}

// serviceSpec is a service with everything resolved from the spec and the operator's options.
type serviceSpec struct {
	engine    engine.Engine
	features  []string
	image     string
	network   string
	container dd.ContainerSpec
}

// Probe pacing: quick retries until the engine's deadline, slower ones after it.
const (
	probeInterval     = time.Second
	probeLateInterval = 15 * time.Second
	featureRetry      = 5 * time.Second
	createRetry       = 5 * time.Second
	pullPollInterval  = 5 * time.Second
)

// restartBackoff spaces the recreation of a container that keeps dying.
func restartBackoff(restarts int32) time.Duration {
	d := 2 * time.Second
	for i := int32(0); i < restarts && d < 2*time.Minute; i++ {
		d *= 2
	}
	return min(d, 2*time.Minute)
}

// resolveService validates a service against the registry and the operator's limits,
// and builds the container it needs.
func (r *SandboxReconciler) resolveService(sb *sandboxv1.Sandbox, svc sandboxv1.ServiceSpec, password string) (serviceSpec, error) {
	e, ok := engine.Lookup(string(svc.Engine))
	if !ok {
		return serviceSpec{}, fmt.Errorf("unknown engine %q; engines: %s", svc.Engine, strings.Join(engine.Names(), ", "))
	}
	features := make([]string, len(svc.Features))
	for i, f := range svc.Features {
		features[i] = string(f)
	}
	// Note: the CRD already refused these; the engine checks again because the
	// allowlist is the security boundary.
	if err := engine.CheckFeatures(e, features); err != nil {
		return serviceSpec{}, err
	}
	memory, cpu := r.Options.DefaultMemory, r.Options.DefaultCPU
	if svc.Resources != nil && svc.Resources.Memory != nil {
		memory = *svc.Resources.Memory
	}
	if svc.Resources != nil && svc.Resources.CPU != nil {
		cpu = *svc.Resources.CPU
	}
	if memory.Cmp(r.Options.MaxMemory) > 0 {
		return serviceSpec{}, fmt.Errorf("%s asks for memory %s; the most allowed is %s", e.Name(), memory.String(), r.Options.MaxMemory.String())
	}
	if memory.Value() < 6<<20 {
		return serviceSpec{}, fmt.Errorf("%s asks for memory %s; Docker needs at least 6Mi", e.Name(), memory.String())
	}
	if cpu.Cmp(r.Options.MaxCPU) > 0 {
		return serviceSpec{}, fmt.Errorf("%s asks for cpu %s; the most allowed is %s", e.Name(), cpu.String(), r.Options.MaxCPU.String())
	}

	network := sb.Spec.Network
	if network == "" {
		network = r.Options.DefaultNetwork
	}
	image := r.Options.imagesFor(e).For(features)
	name := engine.ContainerName(e, sb.Spec.AgentID)
	spec := dd.ContainerSpec{
		Name:  name,
		Image: image,
		Labels: map[string]string{
			LabelSandbox:   labelSandboxTrue,
			LabelOwner:     r.ownerName(sb),
			LabelNamespace: sb.Namespace,
			LabelName:      sb.Name,
			LabelUID:       string(sb.UID),
			LabelEngine:    e.Name(),
			LabelInstance:  r.Options.Instance,
		},
		OwnerLabel:  LabelUID,
		Env:         e.Env(password),
		Cmd:         e.Command(password, features),
		Tmpfs:       e.Tmpfs(),
		MemoryBytes: memory.Value(),
		NanoCPUs:    cpu.MilliValue() * 1_000_000,
		PidsLimit:   r.Options.PidsLimit,
		Network:     network,
	}
	if network != "" {
		spec.Aliases = []string{name}
		if host := engine.HostName(e, sb.Spec.AgentID); host != name {
			spec.Aliases = append(spec.Aliases, host)
		}
	}
	spec.Labels[LabelConfigHash] = configHash(spec)
	return serviceSpec{engine: e, features: features, image: image, network: network, container: spec}, nil
}

// configHash fingerprints everything a running container cannot change, credentials
// included (only their hash is stored): a container whose label differs is replaced.
func configHash(s dd.ContainerSpec) string {
	h := sha256.New()
	write := func(parts ...string) {
		for _, p := range parts {
			h.Write([]byte(p))
			h.Write([]byte{0})
		}
	}
	write(s.Image, s.Network)
	write(s.Cmd...)
	for _, m := range []map[string]string{s.Env, s.Tmpfs} {
		keys := slices.Sorted(maps.Keys(m))
		for _, k := range keys {
			write(k, m[k])
		}
	}
	write(fmt.Sprint(s.MemoryBytes, s.NanoCPUs, s.PidsLimit))
	if len(s.Aliases) > 1 {
		// Only then: the hash of every container made before the host alias existed
		// stays the same, and those that need the alias are replaced to get it.
		write(s.Aliases[1:]...)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// reconcileService drives one service one step further: container, then probe, then
// features. ours are this Sandbox's containers of the service's engine.
func (r *SandboxReconciler) reconcileService(ctx context.Context, sb *sandboxv1.Sandbox, svc serviceSpec,
	password string, prev sandboxv1.ServiceStatus, ours []dd.ContainerSummary) serviceResult {
	e := svc.engine
	res := serviceResult{status: sandboxv1.ServiceStatus{
		Engine:        sandboxv1.Engine(e.Name()),
		ContainerName: svc.container.Name,
		Image:         svc.image,
		Host:          engine.HostName(e, sb.Spec.AgentID),
		Port:          int32(e.Port()),
		Restarts:      prev.Restarts,
	}}
	res.images = okPart(sandboxv1.ReasonPresent)

	var current *dd.ContainerSummary
	for i := range ours {
		c := &ours[i]
		switch {
		case c.Name == svc.container.Name && c.Labels[LabelConfigHash] == svc.container.Labels[LabelConfigHash]:
			current = c
		default:
			// An earlier configuration of this service (image, features, limits or
			// credentials changed): replace it.
			if err := r.Driver.Remove(ctx, c.ID, r.Options.StopTimeout); err != nil {
				return res.dockerFailed(err, "removing the outdated container "+c.Name)
			}
			res.events = append(res.events, serviceEvent{"Normal", "Updated",
				fmt.Sprintf("%s: replacing container %s to apply the new spec", e.Name(), c.Name)})
		}
	}

	// Note: the restart count lives on the container (a label set at creation), not
	// only in status, which a reconcile may read stale from the cache.
	if current != nil {
		res.status.Restarts = max(res.status.Restarts, restartsOf(current.Labels))
	}
	recreating := false
	if current != nil && current.State != dd.StateRunning && current.State != dd.StateCreated {
		c, err := r.Driver.Inspect(ctx, current.ID)
		if err != nil && !errors.Is(err, dd.ErrNotFound) {
			return res.dockerFailed(err, "inspecting "+current.Name)
		}
		if err == nil {
			exitMsg := r.exitMessage(ctx, c)
			if wait := restartBackoff(res.status.Restarts) - time.Since(c.FinishedAt); wait > 0 {
				res.status.ContainerID = c.ID
				res.containers = part{reason: sandboxv1.ReasonExited, message: exitMsg + fmt.Sprintf("; recreating in %s", wait.Round(time.Second))}
				res.probes = part{reason: sandboxv1.ReasonProbing, message: e.Name() + " is not running"}
				res.after(wait)
				return res
			}
			if err := r.Driver.Remove(ctx, c.ID, r.Options.StopTimeout); err != nil {
				return res.dockerFailed(err, "removing the exited container "+c.Name)
			}
			res.events = append(res.events, serviceEvent{"Normal", "Recreated",
				exitMsg + "; recreating it with the same credentials"})
		}
		current, recreating = nil, true
	}
	if current == nil && prev.ContainerID != "" && !recreating {
		recreating = true
		res.events = append(res.events, serviceEvent{"Normal", "Recreated",
			fmt.Sprintf("%s: container %s vanished; recreating it with the same credentials", e.Name(), svc.container.Name)})
	}
	if recreating {
		res.status.Restarts++
	}

	var c dd.Container
	if current == nil || current.State == dd.StateCreated {
		pull := r.pulls.ensure(ctx, svc.image, types.NamespacedName{Namespace: sb.Namespace, Name: sb.Name})
		switch {
		case pull.err != nil:
			res.images = part{reason: sandboxv1.ReasonPullFailed, message: pull.err.Error() +
				fmt.Sprintf("; retrying in %s", pull.retryIn.Round(time.Second))}
			if errors.Is(pull.err, dd.ErrUnavailable) {
				res.images.reason = sandboxv1.ReasonDockerUnavailable
			}
			res.containers = part{reason: sandboxv1.ReasonCreating, message: "waiting for image " + svc.image}
			res.probes = part{reason: sandboxv1.ReasonProbing, message: "waiting for image " + svc.image}
			res.after(pull.retryIn)
			return res
		case !pull.present:
			res.images = part{reason: sandboxv1.ReasonPulling, message: pull.describe(svc.image)}
			res.containers = part{reason: sandboxv1.ReasonCreating, message: "waiting for image " + svc.image}
			res.probes = part{reason: sandboxv1.ReasonProbing, message: "waiting for image " + svc.image}
			res.after(pullPollInterval)
			return res
		}
		spec := svc.container
		spec.Labels = maps.Clone(spec.Labels)
		spec.Labels[LabelRestarts] = strconv.Itoa(int(res.status.Restarts))
		var err error
		c, err = r.Driver.CreateContainer(ctx, spec)
		var conflict *dd.ConflictError
		switch {
		case errors.As(err, &conflict):
			return r.nameConflict(ctx, res, conflict)
		case err != nil:
			return res.dockerFailed(err, "creating "+svc.container.Name)
		}
	} else {
		if prev.Ready && prev.ContainerID == current.ID && slices.Equal(featureStrings(prev.Features), svc.features) {
			// Settled: nothing to ask Docker.
			res.status = prev
			res.images, res.containers, res.probes = okPart(sandboxv1.ReasonPresent), okPart(sandboxv1.ReasonRunning), okPart(sandboxv1.ReasonReady)
			return res
		}
		var err error
		if c, err = r.Driver.Inspect(ctx, current.ID); err != nil {
			return res.dockerFailed(err, "inspecting "+current.Name)
		}
	}
	res.status.ContainerID = c.ID
	if c.State != dd.StateRunning {
		res.containers = part{reason: sandboxv1.ReasonCreating, message: fmt.Sprintf("%s is %s", c.Name, c.State)}
		res.probes = part{reason: sandboxv1.ReasonProbing, message: e.Name() + " is not running"}
		res.after(probeInterval)
		return res
	}
	res.containers = okPart(sandboxv1.ReasonRunning)
	if prev.ContainerID != c.ID {
		res.status.Ready = false
	}

	addr := containerAddress(c, svc.network)
	if addr == "" {
		res.probes = part{reason: sandboxv1.ReasonProbing, message: "waiting for " + c.Name + " to get an address"}
		res.after(probeInterval)
		return res
	}
	if svc.network == "" {
		res.status.Host = addr // the default bridge has no DNS for container names
	}
	return r.probeService(ctx, sb, svc, password, prev, c, addr, res)
}

// probeService runs one bounded probe, then the feature steps once it passes.
func (r *SandboxReconciler) probeService(ctx context.Context, sb *sandboxv1.Sandbox, svc serviceSpec, password string,
	prev sandboxv1.ServiceStatus, c dd.Container, addr string, res serviceResult) serviceResult {
	e := svc.engine
	alreadyAnswered := prev.Ready && prev.ContainerID == c.ID
	if !alreadyAnswered {
		step := e.Probe(password, addr)
		out, err := r.Driver.Exec(ctx, c.ID, dd.ExecSpec{Cmd: step.Argv, Env: step.Env, Timeout: step.Timeout})
		passed := err == nil && step.Passed(out.ExitCode, out.Stdout)
		sandboxMetrics.probeAttempts.WithLabelValues(e.Name(), map[bool]string{true: "success", false: "failure"}[passed]).Inc()
		if !passed {
			detail := ""
			switch {
			case err != nil:
				detail = err.Error()
			default:
				detail = fmt.Sprintf("exit code %d: %s", out.ExitCode, lastLine(out.Stderr+"\n"+out.Stdout))
			}
			deadline := c.StartedAt.Add(r.Options.probeDeadline(e))
			if time.Now().Before(deadline) {
				res.probes = part{reason: sandboxv1.ReasonProbing, message: fmt.Sprintf("%s has not answered yet (%s of %s): %s",
					e.Name(), time.Since(c.StartedAt).Round(time.Second), r.Options.probeDeadline(e), detail)}
				res.after(probeInterval)
			} else {
				res.probes = part{reason: sandboxv1.ReasonProbeTimeout, message: fmt.Sprintf("%s did not answer within %s: %s",
					e.Name(), r.Options.probeDeadline(e), detail)}
				res.after(probeLateInterval)
			}
			return res
		}
	}

	featuresVerified := alreadyAnswered && slices.Equal(featureStrings(prev.Features), svc.features)
	if len(svc.features) > 0 && !featuresVerified {
		if msg := r.activateFeatures(ctx, svc, password, c, addr); msg != "" {
			res.probes = part{reason: sandboxv1.ReasonFeatureVerifyFailed, message: msg}
			res.after(featureRetry)
			return res
		}
	}
	res.status.Features = make([]sandboxv1.Feature, len(svc.features))
	for i, f := range svc.features {
		res.status.Features[i] = sandboxv1.Feature(f)
	}
	res.status.Ready = true
	res.probes = okPart(sandboxv1.ReasonReady)
	if !alreadyAnswered {
		res.becameReady = true
		if prev.ContainerID == "" && res.status.Restarts == 0 {
			sandboxMetrics.timeToReady.WithLabelValues(e.Name()).Observe(time.Since(sb.CreationTimestamp.Time).Seconds())
		}
	}
	return res
}

// activateFeatures enables the requested features, then verifies them with the
// engine's static query; it returns what went wrong, or "".
func (r *SandboxReconciler) activateFeatures(ctx context.Context, svc serviceSpec, password string, c dd.Container, addr string) string {
	e := svc.engine
	steps, err := e.ActivateFeatures(password, addr, svc.features)
	if err != nil {
		return err.Error()
	}
	for _, step := range steps {
		out, err := r.Driver.Exec(ctx, c.ID, dd.ExecSpec{Cmd: step.Argv, Env: step.Env, Timeout: step.Timeout})
		if err != nil {
			return fmt.Sprintf("activating %s features: %v", e.Name(), err)
		}
		if !step.Passed(out.ExitCode, out.Stdout) {
			return fmt.Sprintf("activating %s features %s failed (exit code %d): %s", e.Name(),
				strings.Join(svc.features, ", "), out.ExitCode, lastLine(out.Stderr+"\n"+out.Stdout))
		}
	}
	verify, parse := e.VerifyFeatures(password, addr)
	out, err := r.Driver.Exec(ctx, c.ID, dd.ExecSpec{Cmd: verify.Argv, Env: verify.Env, Timeout: verify.Timeout})
	if err != nil {
		return fmt.Sprintf("verifying %s features: %v", e.Name(), err)
	}
	if out.ExitCode != 0 {
		return fmt.Sprintf("verifying %s features failed (exit code %d): %s", e.Name(), out.ExitCode, lastLine(out.Stderr+"\n"+out.Stdout))
	}
	if missing := engine.Missing(svc.features, parse(out.Stdout)); len(missing) > 0 {
		return fmt.Sprintf("%s features missing after activation: %s (image %s)", e.Name(), strings.Join(missing, ", "), svc.image)
	}
	return ""
}

// nameConflict decides about a container that holds the service's name without our
// UID: stale (its Sandbox is gone) → removed; otherwise never touched.
func (r *SandboxReconciler) nameConflict(ctx context.Context, res serviceResult, conflict *dd.ConflictError) serviceResult {
	existing := conflict.Existing
	key, named := sandboxKey(existing.Labels)
	uid := existing.Labels[LabelUID]
	if instance := existing.Labels[LabelInstance]; named && uid != "" && instance != r.Options.Instance {
		res.containers = part{reason: sandboxv1.ReasonNameConflict, message: fmt.Sprintf(
			"container name %s is taken by container %s of another control plane (instance %q, this one is %q); it is never touched: use another agentID",
			conflict.Name, shortID(existing.ID), instance, r.Options.Instance)}
		return res.stall()
	}
	if !named || uid == "" {
		res.containers = part{reason: sandboxv1.ReasonNameConflict, message: fmt.Sprintf(
			"container name %s is taken by container %s, which carries no Sandbox UID label (a foreign or legacy container); it is never touched: remove it, or let the orphan sweep reap it",
			conflict.Name, shortID(existing.ID))}
		return res.stall()
	}
	// Note: read from the API server, not the cache: a Sandbox created a moment ago
	// must never look gone.
	other := &sandboxv1.Sandbox{}
	err := r.APIReader.Get(ctx, key, other)
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		res.containers = part{reason: sandboxv1.ReasonCreating, message: fmt.Sprintf("checking who owns %s: %v", conflict.Name, err)}
		res.after(createRetry)
		return res
	case err == nil && string(other.UID) == uid:
		res.containers = part{reason: sandboxv1.ReasonNameConflict, message: fmt.Sprintf(
			"container name %s belongs to Sandbox %s/%s (agentID %s): an agentID can have one Sandbox per Docker host",
			conflict.Name, other.Namespace, other.Name, other.Spec.AgentID)}
		return res.stall()
	}
	if err := r.Driver.Remove(ctx, existing.ID, r.Options.StopTimeout); err != nil {
		return res.dockerFailed(err, "removing stale container "+conflict.Name)
	}
	res.events = append(res.events, serviceEvent{"Normal", "StaleRemoved", fmt.Sprintf(
		"removed stale container %s left by Sandbox %s/%s (uid %s), which no longer exists", conflict.Name, key.Namespace, key.Name, uid)})
	res.containers = part{reason: sandboxv1.ReasonCreating, message: "removed a stale container holding " + conflict.Name}
	res.probes = part{reason: sandboxv1.ReasonProbing, message: "waiting for the container"}
	res.after(10 * time.Millisecond)
	return res
}

// redacted removes a password from every message and event of the result: output of
// the engines' tools and Docker's errors are quoted in conditions and events.
func (res serviceResult) redacted(password string) serviceResult {
	if password == "" {
		return res
	}
	hide := func(s string) string { return strings.ReplaceAll(s, password, "<redacted>") }
	res.images.message = hide(res.images.message)
	res.containers.message = hide(res.containers.message)
	res.probes.message = hide(res.probes.message)
	res.events = slices.Clone(res.events)
	for i := range res.events {
		res.events[i].message = hide(res.events[i].message)
	}
	return res
}

func (res serviceResult) stall() serviceResult {
	res.stalled = true
	res.probes = part{reason: sandboxv1.ReasonProbing, message: "waiting for the container"}
	return res
}

// dockerFailed records a failed Docker call on the containers condition.
func (res serviceResult) dockerFailed(err error, doing string) serviceResult {
	reason := sandboxv1.ReasonCreating
	if errors.Is(err, dd.ErrUnavailable) {
		reason = sandboxv1.ReasonDockerUnavailable
	}
	res.containers = part{reason: reason, message: fmt.Sprintf("%s: %v", doing, err)}
	if res.probes.reason == "" {
		res.probes = part{reason: sandboxv1.ReasonProbing, message: "waiting for the container"}
	}
	res.after(createRetry)
	return res
}

// exitMessage says how a container ended, with the last lines of its log.
func (r *SandboxReconciler) exitMessage(ctx context.Context, c dd.Container) string {
	msg := fmt.Sprintf("container %s exited with code %d", c.Name, c.ExitCode)
	if c.OOMKilled {
		msg += " (OOM-killed: raise resources.memory)"
	}
	if c.Error != "" {
		msg += ": " + c.Error
	}
	if logs, err := r.Driver.LogsTail(ctx, c.ID, 5); err == nil && strings.TrimSpace(logs) != "" {
		msg += "; last log lines: " + strings.Join(strings.Fields(strings.TrimSpace(logs)), " ")
	}
	if len(msg) > 1024 {
		msg = msg[:1024] + "…"
	}
	return msg
}

// containerAddress is the container's IP on the service network.
func containerAddress(c dd.Container, network string) string {
	if network == "" {
		network = "bridge"
	}
	if ep, ok := c.Networks[network]; ok && ep.IPAddress != "" {
		return ep.IPAddress
	}
	names := slices.Sorted(maps.Keys(c.Networks))
	for _, n := range names {
		if ip := c.Networks[n].IPAddress; ip != "" {
			return ip
		}
	}
	return ""
}

// restartsOf reads the restart count a container was created with.
func restartsOf(labels map[string]string) int32 {
	n, _ := strconv.Atoi(labels[LabelRestarts])
	return int32(n)
}

func featureStrings(fs []sandboxv1.Feature) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = string(f)
	}
	return out
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			if len(l) > 512 {
				l = l[:512] + "…"
			}
			return l
		}
	}
	return "no output"
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
