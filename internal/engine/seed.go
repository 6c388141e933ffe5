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

// InitPastTotal names the seed's own bound in the message of a seed stopped
// at it (the API field that sets it, and the operator's flag that caps it).
const InitPastTotal = "init.timeout, at most the manager's --init-max-timeout"

// initScript runs the files in order, once per container: a run already done
// passes, one that failed fails again with its message without running
// anything, one still running (its manager restarted meanwhile) is waited for.
// Each script runs as RUN_ONE (the engine's) under timeout, within T seconds,
// and all within TOTAL seconds (0: no total). A run stopped at its total is
// cut short, not failed, once TOTAL changes: its container is made again.
const initScript = `set -u
S=` + initState + `; n=0
while :; do
	[ -e "$S/done" ] && exit 0
	if [ -e "$S/failed" ]; then
		was=$(cat "$S/total" 2>/dev/null || true)
		[ -n "$was" ] && [ "$was" != "$TOTAL" ] && { echo "the seed stopped at its total time of ${was}s; it may now take ${TOTAL}s" >&2; exit 4; }
		cat "$S/failed" >&2; exit 1
	fi
	mkdir "$S" 2>/dev/null && break
	pid=$(cat "$S/pid" 2>/dev/null || true)
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then sleep 0.2; continue; fi
	n=$((n+1)); [ -z "$pid" ] && [ "$n" -lt 25 ] && { sleep 0.2; continue; }
	echo "an earlier run of the init scripts was cut short" >&2; exit 4
done
echo $$ > "$S/pid"
` + runScripts + `
msg=$(run_scripts "$@"); rc=$?
if [ "$rc" -ne 0 ]; then
	[ "$rc" -eq 2 ] && echo "$TOTAL" > "$S/total"
	printf '%s\n' "$msg" > "$S/failed.tmp" && mv "$S/failed.tmp" "$S/failed"
	cat "$S/failed" >&2; exit 1
fi
touch "$S/done"`

// runScripts defines run_scripts FILE...: each init script (under InitDir) in
// order, as RUN_ONE under timeout (T seconds, and what is left of TOTAL
// seconds when set); at the first that fails it prints the key and its first
// error line and returns 1, or 2 when the total time ran out.
const runScripts = `run_scripts() {
	total=${TOTAL:-0}; end=$(( $(date +%s) + total ))
	over="stopped at the seed's total time of ${total}s (` + InitPastTotal + `)"
	i=0
	for f in "$@"; do
		i=$((i + 1)); t=$T
		[ -n "${STEP_PROGRESS:-}" ] && printf '%d of %d scripts, %s\n' "$i" "$#" "$f" >> "$STEP_PROGRESS"
		if [ "$total" -gt 0 ]; then
			left=$(( end - $(date +%s) ))
			[ "$left" -gt 0 ] || { printf '%s: %s\n' "$f" "$over"; return 2; }
			[ "$left" -lt "$t" ] && t=$left
		fi
		if ! out=$(timeout -s KILL "$t" sh -c "$RUN_ONE" run_one "` + InitDir + `$f" 2>&1); then
			[ "$total" -gt 0 ] && [ "$(date +%s)" -ge "$end" ] && { printf '%s: %s\n' "$f" "$over"; return 2; }
			line=$(printf '%s\n' "$out" | grep -m1 -iE 'error|exception|fatal' || true)
			[ -n "$line" ] || line=$(printf '%s\n' "$out" | grep -v '^[[:space:]]*$' | tail -n1 || true)
			[ -n "$line" ] || line="no output: killed at its deadline (${T}s per script) or exited non-zero"
			printf '%s: %s\n' "$f" "$line"
			return 1
		fi
	done
}`

// Seed is the step that runs the init scripts files (key names, under
// InitDir, in the order given) against addr, each within perScript and all
// within total, the exec's own bound (0: (files+1) × perScript).
func Seed(e Engine, password, addr string, files []string, perScript, total time.Duration) Step {
	r := e.Init(password, addr)
	env := maps.Clone(r.Env)
	env["ADDR"], env["PORT"], env["RUN_ONE"] = addr, strconv.Itoa(e.Port()), r.RunOne
	env["T"], env["TOTAL"] = seconds(perScript), "0"
	bound := time.Duration(len(files)+1) * perScript
	if total > 0 {
		env["TOTAL"], bound = seconds(total), total
	}
	return Step{
		Argv: append([]string{"sh", "-c", initScript, "init"}, files...),
		Env:  env,
		// Note: the slack covers the wait for an earlier run and the shell's own work.
		Timeout: bound + 10*time.Second,
	}
}

// seconds is d in whole seconds, at least 1, for timeout(1).
func seconds(d time.Duration) string { return strconv.Itoa(max(1, int(d.Seconds()))) }

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
