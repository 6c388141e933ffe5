package host

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

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
	write(s.CapAdd...)
	write(s.Log.MaxSize, fmt.Sprint(s.Log.MaxFiles))
	for _, f := range s.Files {
		write(f.Path, fmt.Sprint(f.Mode), string(f.Content))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// CredentialsHash is LabelCredentials' value for a password: Docker cannot show
// the file a password is delivered in, so the label says which one it was. A
// hash of 192 random bits gives nothing away.
func CredentialsHash(password string) string {
	sum := sha256.Sum256([]byte("sandbox.roboco.io/credentials\x00" + password))
	return hex.EncodeToString(sum[:])[:16]
}

// FeaturesLabel is LabelFeatures' value: the features, sorted, comma-separated.
func FeaturesLabel(features []string) string {
	return strings.Join(slices.Sorted(slices.Values(features)), ",")
}
