package host

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// Fingerprint hashes everything a running container cannot change, credentials
// included (only their hash is stored). It is written on the container as
// LabelConfigHash, so that judging an unchanged container costs no inspect; the
// judgement itself is Differences, over what Docker reports the container was made
// with.
func Fingerprint(s dd.ContainerSpec) string {
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
		for _, k := range slices.Sorted(maps.Keys(m)) {
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

// Differences lists, in words, how the container c (as inspected) differs from
// want in what a running container cannot change; none means c serves want as it
// is. Secrets in the environment are never quoted.
func Differences(want dd.ContainerSpec, c dd.Container) []string {
	var diffs []string
	add := func(format string, args ...any) { diffs = append(diffs, fmt.Sprintf(format, args...)) }
	if c.Image != want.Image {
		add("image %s → %s", c.Image, want.Image)
	}
	network := want.Network
	if network == "" {
		network = "bridge"
	}
	ep, joined := c.Networks[network]
	switch {
	case !joined:
		add("network → %s", network)
	case want.Network != "":
		for _, a := range want.Aliases {
			if !slices.Contains(ep.Aliases, a) {
				add("alias %s added", a)
			}
		}
	}
	// Note: an empty want.Cmd is the image's own, which Docker reports in its place.
	if len(want.Cmd) > 0 && !slices.Equal(c.Cmd, want.Cmd) {
		add("command changed")
	}
	if changed := envChanges(want.Env, c.Env); len(changed) > 0 {
		add("environment %s changed", strings.Join(changed, ", "))
	}
	if !maps.Equal(c.Tmpfs, want.Tmpfs) {
		add("tmpfs mounts changed")
	}
	if c.MemoryBytes != want.MemoryBytes {
		add("memory %s → %s", resource.NewQuantity(c.MemoryBytes, resource.BinarySI), resource.NewQuantity(want.MemoryBytes, resource.BinarySI))
	}
	if c.NanoCPUs != want.NanoCPUs {
		add("cpu %s → %s", resource.NewMilliQuantity(c.NanoCPUs/1e6, resource.DecimalSI), resource.NewMilliQuantity(want.NanoCPUs/1e6, resource.DecimalSI))
	}
	if c.PidsLimit != want.PidsLimit {
		add("pids limit %d → %d", c.PidsLimit, want.PidsLimit)
	}
	return diffs
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
