package engine

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// RotatedMarker is what a Rotate step prints last, once the password is changed,
// proven and written to the secret files.
const RotatedMarker = "sandbox-rotated"

// Env names through which a Rotate step gets its passwords; file i's new content
// travels in rotateSecretEnv+i.
const (
	rotateOldEnv    = "OLD_PASSWORD"
	rotateNewEnv    = "NEW_PASSWORD"
	rotateSecretEnv = "SANDBOX_SECRET_"
)

// rotateFramework wraps an engine's change script. Argv is `sh -c <script> rotate
// ADDR PORT FILE...`. The engine part runs with ADDR, PORT, OLD_PASSWORD and
// NEW_PASSWORD set and must exit non-zero unless a login with NEW_PASSWORD works.
// Then each FILE is replaced (a temporary file renamed over it, same mode) by the
// content in SANDBOX_SECRET_<i>, byte for byte. Note: an empty new password would
// switch Redis's authentication off, so it is refused before anything changes.
const rotateFramework = `set -eu
: "${NEW_PASSWORD:?is empty}"
ADDR=$1 PORT=$2
shift 2
export ADDR PORT
rotate_service() {
@SERVICE@
}
rotate_service
i=0
for f in "$@"; do
	eval "content=\${` + rotateSecretEnv + `$i}"
	mode=$(stat -c %a "$f" 2>/dev/null || echo 444)
	rm -f "$f.rotating"
	(umask 077 && printf '%s' "$content" >"$f.rotating")
	chmod "$mode" "$f.rotating"
	mv -f "$f.rotating" "$f"
	i=$((i + 1))
done
echo ` + RotatedMarker + `
`

// rotateStep is the Rotate step of e: script is its engine part (see
// rotateFramework), env adds what that part needs besides the passwords. The
// secret files it rewrites are named in argv; their content, as the passwords,
// comes from RotateEnv.
func rotateStep(e Engine, script, addr string, env map[string]string, timeout time.Duration) Step {
	argv := []string{"sh", "-c", strings.Replace(rotateFramework, "@SERVICE@", script, 1), "rotate", addr, strconv.Itoa(e.Port())}
	argv = append(argv, slices.Sorted(maps.Keys(e.Container("", nil).Secrets))...)
	return Step{Argv: argv, Env: env, Timeout: timeout, Expect: RotatedMarker}
}

// RotateEnv is what e's Rotate step needs at run time to switch from
// oldPassword to newPassword: the passwords, and the new content of the secret
// files. Note: the files are e's Container(newPassword).Secrets, so they hold
// exactly what a container made with newPassword would; that needs Secrets not to
// depend on features (TestSecretsIgnoreFeatures).
func RotateEnv(e Engine, oldPassword, newPassword string) map[string]string {
	secrets := e.Container(newPassword, nil).Secrets
	env := map[string]string{rotateOldEnv: oldPassword, rotateNewEnv: newPassword}
	for i, path := range slices.Sorted(maps.Keys(secrets)) {
		env[rotateSecretEnv+strconv.Itoa(i)] = secrets[path]
	}
	return env
}
