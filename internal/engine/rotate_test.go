package engine_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
)

// TestRotateKeepsPasswordsOutOfArgv: a Rotate exec's argv shows in process
// listings, and the step is prepared before the passwords are known; both
// passwords come in RotateEnv, and so does the new content of every secret file,
// which argv names.
func TestRotateKeepsPasswordsOutOfArgv(t *testing.T) {
	const oldPW, newPW, addr = "old-pw-0123456789", "new-pw-9876543210", "172.18.0.7"
	for _, e := range engine.All() {
		t.Run(e.Name(), func(t *testing.T) {
			s := e.Rotate(addr)
			if s.Argv == nil {
				t.Fatal("no rotation: the engine could not be pooled")
			}
			argv := strings.Join(s.Argv, " ")
			env := slices.Collect(maps.Values(engine.RotateEnv(e, oldPW, newPW)))
			for _, pw := range []string{oldPW, newPW} {
				if strings.Contains(argv, pw) || slices.Contains(slices.Collect(maps.Values(s.Env)), pw) {
					t.Errorf("the step itself carries a password: %s %v", argv, s.Env)
				}
				if !slices.Contains(env, pw) {
					t.Errorf("RotateEnv does not carry %s", pw)
				}
			}
			if !slices.Contains(s.Argv, addr) {
				t.Errorf("argv does not name the container address %s: %s", addr, argv)
			}
			for _, loop := range []string{"localhost", "127.0.0.1", "::1"} {
				if strings.Contains(argv, loop) {
					t.Errorf("targets loopback (%s), which the init server answers on", loop)
				}
			}
			secrets := e.Container(newPW, nil).Secrets
			for path, content := range secrets {
				if !slices.Contains(s.Argv, path) || !slices.Contains(env, content) {
					t.Errorf("secret file %s: not named in argv, or its new content not in env", path)
				}
			}
			if len(secrets) == 0 {
				t.Error("the engine has no secret file to rewrite")
			}
			if s.Timeout <= 0 {
				t.Error("no timeout")
			}
			if s.Passed(0, "") {
				t.Error("a run that printed nothing counts as passed")
			}
		})
	}
}

// TestSecretsIgnoreFeatures: Rotate rewrites the files of Container(newPassword,
// nil), which must be those of a container made with any features.
func TestSecretsIgnoreFeatures(t *testing.T) {
	for _, e := range engine.All() {
		if got, want := e.Container("pw-x", e.Features()).Secrets, e.Container("pw-x", nil).Secrets; !maps.Equal(got, want) {
			t.Errorf("%s: secrets with features %v, without %v", e.Name(), got, want)
		}
	}
}
