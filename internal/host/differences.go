package host

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// Cause is whose change a difference comes from.
type Cause string

const (
	// CauseSpec: the Sandbox's spec (features, the resources or network it set)
	// or its credentials. A running container is replaced for it at once.
	CauseSpec Cause = "spec"
	// CauseOperator: the manager's settings (images, default limits, pids,
	// hardening, how containers are made). A running container keeps running,
	// with its data, until a rollout replaces it.
	CauseOperator Cause = "operator"
)

// Difference is one way a container differs from what is wanted, in words that
// never quote a secret.
type Difference struct {
	Cause Cause
	What  string
}

// Differences lists how the container c (as inspected) differs from svc in what
// a running container cannot change, each with its cause; none means c serves
// svc as it is.
func Differences(svc Service, c dd.Container) []Difference {
	want := svc.Container
	var diffs []Difference
	add := func(cause Cause, format string, args ...any) {
		diffs = append(diffs, Difference{cause, fmt.Sprintf(format, args...)})
	}
	versionChanged := c.Labels[LabelVersion] != want.Labels[LabelVersion]
	byFeatures := operatorUnless(featuresChanged(svc, c) || versionChanged)
	if versionChanged {
		add(CauseSpec, "version %s → %s", versionName(c.Labels[LabelVersion]), versionName(want.Labels[LabelVersion]))
	}
	if c.Image != want.Image {
		add(byFeatures, "image %s → %s", c.Image, want.Image)
	}
	networkDifference(svc, c, add)
	// Note: an empty want.Cmd is the image's own, which Docker reports in its place.
	if len(want.Cmd) > 0 && !slices.Equal(c.Cmd, want.Cmd) {
		add(byFeatures, "command changed")
	}
	if changed := envChanges(want.Env, c.Env); len(changed) > 0 {
		add(CauseOperator, "environment %s changed", strings.Join(changed, ", "))
	}
	if !credentialsMatch(svc, c) {
		add(CauseSpec, "credentials changed")
	}
	// Note: seeded data is the agent's working state: new scripts replace it
	// as the update strategy says, like the operator's changes (or at once
	// where the scripts failed: the Sandbox's rollOut).
	if c.Labels[LabelInit] != want.Labels[LabelInit] {
		add(CauseOperator, "init scripts changed since it was seeded")
	}
	if !maps.Equal(c.Tmpfs, want.Tmpfs) {
		add(CauseOperator, "tmpfs mounts changed")
	}
	limitDifferences(svc, c, add)
	hardeningDifferences(want, c, add)
	return diffs
}

func operatorUnless(spec bool) Cause {
	if spec {
		return CauseSpec
	}
	return CauseOperator
}

// featuresChanged says whether c was made for other features than svc's, by its
// features label; a container made before that label by its image: the
// operator's image for the other choice of features.
func featuresChanged(svc Service, c dd.Container) bool {
	if made, ok := c.Labels[LabelFeatures]; ok {
		return made != FeaturesLabel(svc.Features)
	}
	other := svc.Images.KitchenSink
	if len(svc.Features) > 0 {
		other = svc.Images.Default
	}
	return c.Image != svc.Container.Image && c.Image == other
}

// credentialsMatch says whether c was made with svc's password: by its
// credentials label, or, on a container made before the password moved into a
// file, by the password in its environment or command.
func credentialsMatch(svc Service, c dd.Container) bool {
	if made, ok := c.Labels[LabelCredentials]; ok {
		return made == CredentialsHash(svc.Password)
	}
	return svc.Password == "" || slices.ContainsFunc(append(slices.Clone(c.Env), c.Cmd...), func(s string) bool {
		return strings.Contains(s, svc.Password)
	})
}

func networkDifference(svc Service, c dd.Container, add func(Cause, string, ...any)) {
	want := svc.Container
	network := want.Network
	if network == "" {
		network = "bridge"
	}
	ep, joined := c.Networks[network]
	switch {
	case !joined:
		add(operatorUnless(svc.Chosen.Network), "network → %s", network)
	case want.Network != "":
		for _, a := range want.Aliases {
			if !slices.Contains(ep.Aliases, a) {
				add(CauseOperator, "alias %s added", a)
			}
		}
	}
}

func limitDifferences(svc Service, c dd.Container, add func(Cause, string, ...any)) {
	want := svc.Container
	if c.MemoryBytes != want.MemoryBytes {
		add(operatorUnless(svc.Chosen.Memory), "memory %s → %s",
			resource.NewQuantity(c.MemoryBytes, resource.BinarySI), resource.NewQuantity(want.MemoryBytes, resource.BinarySI))
	}
	if c.NanoCPUs != want.NanoCPUs {
		add(operatorUnless(svc.Chosen.CPU), "cpu %s → %s",
			resource.NewMilliQuantity(c.NanoCPUs/1e6, resource.DecimalSI), resource.NewMilliQuantity(want.NanoCPUs/1e6, resource.DecimalSI))
	}
	if c.PidsLimit != want.PidsLimit {
		add(CauseOperator, "pids limit %d → %d", c.PidsLimit, want.PidsLimit)
	}
}

// hardeningDifferences compares what the driver makes every container with.
func hardeningDifferences(want dd.ContainerSpec, c dd.Container, add func(Cause, string, ...any)) {
	if c.MemorySwapBytes != want.MemoryBytes {
		add(CauseOperator, "swap allowed")
	}
	if !slices.Equal(c.CapDrop, []string{dd.CapAll}) || !slices.Equal(slices.Sorted(slices.Values(c.CapAdd)), slices.Sorted(slices.Values(want.CapAdd))) {
		add(CauseOperator, "capabilities → only %s", strings.Join(want.CapAdd, ", "))
	}
	if c.LogDriver != dd.LogDriverJSONFile || c.Log != want.Log {
		add(CauseOperator, "log limits → %d files of %s", want.Log.MaxFiles, want.Log.MaxSize)
	}
}

// envChanges names the variables of want that env (KEY=value, the image's
// included) lacks or holds with another value.
func envChanges(want map[string]string, env []string) []string {
	have := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		have[k] = v
	}
	var changed []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if v, ok := have[k]; !ok || v != want[k] {
			changed = append(changed, k)
		}
	}
	return changed
}

func versionName(v string) string {
	if v == "" {
		return "the default"
	}
	return v
}
