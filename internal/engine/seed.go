package engine

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// InitDir is where a service's init scripts are placed in its container (at
// create time: a changed script is a new container).
const InitDir = "/run/sandbox-init/"

// InitRunner is how one engine runs one init script.
type InitRunner struct {
	// Suffix is the key suffix of the scripts the engine runs (.sql, .js, .redis).
	Suffix string
	// RunOne is a sh function body: run the script file $1, exit non-zero at its
	// first error. ADDR and PORT are set; secrets come through Env.
	RunOne string
	// Env carries the password, never the command line.
	Env map[string]string
}

// InitSuffixes are the suffixes some engine runs, for messages.
func InitSuffixes() []string {
	var out []string
	for _, e := range registry {
		out = append(out, e.Init("", "").Suffix)
	}
	return out
}

// initState is where a container records its init run: done, failed (with
// the message), and the pid of the run in progress.
const initState = "/tmp/sandbox-init"

// InitCutShort is the init step's exit code when an earlier run ended without
// finishing (its exec cut with its manager): the service's state is unknown,
// so the container is made again. 0 is done, 1 a script failed.
const InitCutShort = 4

// initScript runs the files in order, once per container: a run already done
// passes, one that failed fails again with its message without running
// anything, one still running (its manager restarted meanwhile) is waited for.
// Each script runs as RUN_ONE (the engine's) under timeout, within T seconds.
const initScript = `set -u
S=` + initState + `; n=0
while :; do
	[ -e "$S/done" ] && exit 0
	[ -e "$S/failed" ] && { cat "$S/failed" >&2; exit 1; }
	mkdir "$S" 2>/dev/null && break
	pid=$(cat "$S/pid" 2>/dev/null || true)
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then sleep 0.2; continue; fi
	n=$((n+1)); [ -z "$pid" ] && [ "$n" -lt 25 ] && { sleep 0.2; continue; }
	echo "an earlier run of the init scripts was cut short" >&2; exit 4
done
echo $$ > "$S/pid"
` + runScripts + `
if ! msg=$(run_scripts "$@"); then
	printf '%s\n' "$msg" > "$S/failed.tmp" && mv "$S/failed.tmp" "$S/failed"
	cat "$S/failed" >&2; exit 1
fi
touch "$S/done"`

// runScripts defines run_scripts FILE...: each init script (under InitDir) in
// order, as RUN_ONE under timeout (T seconds); at the first that fails it
// prints the key and its first error line and returns 1.
const runScripts = `run_scripts() {
	for f in "$@"; do
		if ! out=$(timeout -s KILL "$T" sh -c "$RUN_ONE" run_one "` + InitDir + `$f" 2>&1); then
			line=$(printf '%s\n' "$out" | grep -m1 -iE 'error|exception|fatal' || true)
			[ -n "$line" ] || line=$(printf '%s\n' "$out" | grep -v '^[[:space:]]*$' | tail -n1 || true)
			[ -n "$line" ] || line="no output: killed at its deadline (${T}s per script) or exited non-zero"
			printf '%s: %s\n' "$f" "$line"
			return 1
		fi
	done
}`

// Seed is the step that runs the init scripts files (key names, under
// InitDir, in the order given) against addr, each within perScript.
func Seed(e Engine, password, addr string, files []string, perScript time.Duration) Step {
	r := e.Init(password, addr)
	env := maps.Clone(r.Env)
	env["ADDR"], env["PORT"], env["RUN_ONE"] = addr, strconv.Itoa(e.Port()), r.RunOne
	env["T"] = strconv.Itoa(max(1, int(perScript.Seconds())))
	return Step{
		Argv:    append([]string{"sh", "-c", initScript, "init"}, files...),
		Env:     env,
		Timeout: time.Duration(len(files)+1)*perScript + 10*time.Second,
	}
}

// InitKeys are the keys of data e runs, in lexical order; other reports a key
// no engine runs ("" when none).
func InitKeys(e Engine, keys []string) (mine []string, other string) {
	suffix := e.Init("", "").Suffix
	for _, k := range slices.Sorted(slices.Values(keys)) {
		switch {
		case strings.HasSuffix(k, suffix):
			mine = append(mine, k)
		case !slices.ContainsFunc(InitSuffixes(), func(s string) bool { return strings.HasSuffix(k, s) }):
			other = k
		}
	}
	return mine, other
}
