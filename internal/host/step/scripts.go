package step

// Base is where a container keeps its steps' state: one directory per key.
const Base = "/tmp/sandbox-steps"

// RunnerExit is the exit code of every step's runner, so that an exec_die
// with it says "a step ended here" and a consumer need not wake on every
// probe's. It is the runner's, never the step's (see State.ExitCode). A
// runner that finds its key taken exits 86 instead: that Start ended nothing,
// so it wakes no one (a pass that woke on it would start it again, forever).
const RunnerExit = 87

// reaper becomes the child subreaper (prctl PR_SET_CHILD_SUBREAPER, 36, by
// perl's syscall, where the image has perl and the machine's syscall number
// is known), then runs the runner in its place: the flag outlives exec. A
// process of the step orphaned later comes to the runner, not to PID 1.
// Arguments: the runner's script, then its own.
const reaper = `s=$1; shift
case $(uname -m 2>/dev/null) in x86_64) n=157 ;; aarch64|riscv64) n=167 ;; *) n= ;; esac
if [ -n "$n" ] && command -v perl >/dev/null 2>&1; then
	exec perl -e 'syscall($ARGV[0] + 0, 36, 1); shift @ARGV; exec @ARGV or exit 127' "$n" sh -c "$s" step "$@"
fi
exec sh -c "$s" step "$@"`

// prelude is what every script knows of the step directory $1.
//   - alive: the runner recorded in runner (pid and start time, so that a pid
//     reused after a restart is not taken for it) still runs;
//   - ended: it will change no more (a runner that never recorded itself
//     counts as gone 30s after the directory was made);
//   - observe A N: waits up to A×50ms for the directory to appear (a runner
//     just started makes it), then up to N×50ms for its end, and prints its
//     state as "key value" lines, the untrusted files hex-encoded and bounded.
const prelude = `set -u
D=$1
alive() {
	r=$(cat "$D/runner" 2>/dev/null) || return 1
	set -- $r
	[ $# -eq 2 ] && [ "$(cut -d' ' -f22 "/proc/$1/stat" 2>/dev/null)" = "$2" ]
}
ended() {
	[ -e "$D/exit" ] && return 0
	alive && return 1
	[ -e "$D/runner" ] && return 0
	[ $(($(date +%s) - $(stat -c %Y "$D" 2>/dev/null || date +%s))) -gt 30 ]
}
hex() { od -An -v -tx1 | tr -d ' \n'; }
observe() {
	i=0
	while [ ! -d "$D" ] && [ "$i" -lt "$1" ]; do sleep 0.05; i=$((i + 1)); done
	i=0
	while [ -d "$D" ] && [ ! -e "$D/exit" ] && [ "$i" -lt "$2" ]; do sleep 0.05; i=$((i + 1)); done
	[ -d "$D" ] || { echo absent; return; }
	if ! ended; then echo running
	elif [ -e "$D/exit" ]; then echo "exit $(cat "$D/exit")"
	else echo lost; fi
	[ -e "$D/cancelled" ] && echo cancelled
	echo "started $(cat "$D/started" 2>/dev/null)"
	echo "now $(date +%s)"
	printf 'progress '; tail -c 512 "$D/progress" 2>/dev/null | hex; echo
	printf 'out '; tail -c 1024 "$D/out" 2>/dev/null | hex; echo
	echo "progressed $(stat -c %Y "$D/progress" 2>/dev/null)"
}
`

// runner is the detached exec's process: it claims the step directory $1
// (mkdir: at most one runner per key, ever), runs "$@" in a session of its
// own with its output's tail kept, records the exit code, kills what the
// step left in its group and reaps whatever it inherited before it exits.
// The step checks for a Cancel after recording its group, which Cancel
// records before it reads the group: one of the two sees the other.
const runner = `set -u
D=$1; shift
mkdir -p "${D%/*}" && mkdir "$D" 2>/dev/null || exit 86
echo "$$ $(cut -d' ' -f22 /proc/$$/stat)" > "$D/runner"
date +%s > "$D/started"
: > "$D/progress"
kids() {
	for f in /proc/[0-9]*/status; do
		{ while read -r k v; do
			if [ "$k" = PPid: ]; then [ "$v" = "$$" ] && return 0; break; fi
		done < "$f"; } 2>/dev/null
	done
	return 1
}
mkfifo "$D/pipe"
tail -c 4096 < "$D/pipe" > "$D/out" &
STEP_PROGRESS=$D/progress setsid sh -c 'echo $$ > "$0/pgid"; [ -e "$0/cancelled" ] && exit 137; exec "$@"' "$D" "$@" > "$D/pipe" 2>&1 < /dev/null &
wait $!
rc=$?
read -r g < "$D/pgid" 2>/dev/null && kill -s KILL -- "-$g" 2>/dev/null
wait
rm -f "$D/pipe"
echo "$rc $(date +%s)" > "$D/exit.tmp" && mv "$D/exit.tmp" "$D/exit"
while kids; do sleep 0.1; done
exit 87`

// observeScript prints the state of step $1 after waiting up to $3×50ms for
// it to appear and $2×50ms for its end.
const observeScript = prelude + `observe "$3" "$2"`

// cancelScript kills step $1's process group unless it has ended, marks it
// cancelled, and prints its state after waiting up to $2×50ms for its end.
const cancelScript = prelude + `if [ -d "$D" ] && [ ! -e "$D/exit" ]; then
	: > "$D/cancelled"
	if alive && read -r g < "$D/pgid" 2>/dev/null; then kill -s KILL -- "-$g" 2>/dev/null; fi
fi
observe 0 "$2"`

// forgetScript removes step $1's directory once it has ended, so that its
// key may run again; a step still running is left, and its state printed.
const forgetScript = prelude + `[ -d "$D" ] && ended && rm -rf "$D"
observe 0 0`
