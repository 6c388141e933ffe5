package dockerdriver

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// heldPrefix starts the names the hold script uses for itself.
const heldPrefix = "_held_"

// CheckHeldEnv says why env cannot be given to a PreparedExec's Run: a name a
// shell cannot assign (or one the hold script uses), or a value with a NUL byte
// (no environment holds one).
func CheckHeldEnv(env map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if !envName.MatchString(k) || strings.HasPrefix(k, heldPrefix) {
			return fmt.Errorf("environment variable name %q: want letters, digits and _, not first a digit, not starting %s", k, heldPrefix)
		}
		if strings.ContainsRune(env[k], 0) {
			return fmt.Errorf("environment variable %s holds a NUL byte", k)
		}
	}
	return nil
}

// WithEnv is s with env added to its environment (env wins): what a prepared
// exec runs once Run gives it the late variables.
func (s ExecSpec) WithEnv(env map[string]string) ExecSpec {
	merged := maps.Clone(s.Env)
	if merged == nil {
		merged = map[string]string{}
	}
	maps.Copy(merged, env)
	s.Env = merged
	return s
}
