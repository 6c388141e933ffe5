package step

import dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"

// Base is where a container keeps its steps' state: one directory per key.
const Base = "/tmp/sandbox-steps"

// RunnerExit is the exit code of every step's runner, so that an exec_die
// with it says "a step ended here" and a consumer need not wake on every
// probe's. It is the runner's, never the step's (see State.ExitCode). A
// runner that finds its key taken exits runnerTaken (86) instead: that Start ended nothing,
// so it wakes no one (a pass that woke on it would start it again, forever).
const RunnerExit = 87

// runnerTaken is the exit code of a runner that found its key taken.
const runnerTaken = 86 // see RunnerExit

// reaper runs the step's runner: the one in perl where the image has perl,
// else the one in sh. The perl runner is one process where the sh one forks
// half a dozen (its mkdir, fifo, tail, setsid, shell), each milliseconds of
// every data operation on a busy host. It holds itself
// (dd.ExecSpec.HoldsItself): it starts when the launch is prepared, and perl
// (or, for the sh runner, the reaper) reads the environment on stdin, so the
// shell's and perl's starts are not on the launch's path. Its own variables
// start with the hold script's prefix, which no step's environment may use
// (dd.CheckHeldEnv): the environment is read in its shell.
// Arguments: the sh runner, the perl runner, then the step's command.
const reaper = `_held_run=$1 _held_perl=$2; shift 2
command -v perl >/dev/null 2>&1 && exec perl -e "$_held_perl" -- "$@"
` + dd.HoldRead + `
exec sh -c "$_held_run" step "$@" </dev/null`

// stateFuncs are what every script knows of the step directory $D.
//   - alive: the runner recorded in runner (pid and start time, so that a pid
//     reused after a restart is not taken for it) still runs;
//   - ended: it will change no more (a runner that never recorded itself,
//     or is writing its record, counts as gone 30s after the directory was
//     made: a busy host may hold it between mkdir and write for long). The runner writes
//     its exit code in one write, so a reader that finds the file empty
//     looks again; its start and end are the mtimes of runner and exit
//     (dates cost forks; an earlier runner wrote them, and is still read);
//   - appears A: waits up to A×50ms for the directory to appear (a runner
//     just launched makes it);
//   - observe A N: appears A, then waits up to N×50ms for its end, and prints its
//     state as "key value" lines, the untrusted files hex-encoded and bounded;
//   - cancel: marks the step cancelled and kills its process group, unless
//     it has ended;
//   - supersede: cancels the steps of $D's ID still running and removes
//     those ended, but $D.
const stateFuncs = `alive() {
	r=$(cat "$D/runner" 2>/dev/null) || return 1
	set -- $r
	[ $# -eq 2 ] && [ "$(cut -d' ' -f22 "/proc/$1/stat" 2>/dev/null)" = "$2" ]
}
ended() {
	[ -s "$D/exit" ] && return 0
	alive && return 1
	[ -s "$D/runner" ] && return 0
	[ $(($(date +%s) - $(stat -c %Y "$D" 2>/dev/null || date +%s))) -gt 30 ]
}
hex() { od -An -v -tx1 | tr -d ' \n'; }
appears() {
	i=0
	while [ ! -d "$D" ] && [ "$i" -lt "$1" ]; do sleep 0.05; i=$((i + 1)); done
}
observe() {
	appears "$1"
	i=0
	while [ -d "$D" ] && [ ! -s "$D/exit" ] && [ "$i" -lt "$2" ]; do sleep 0.05; i=$((i + 1)); done
	[ -d "$D" ] || { echo absent; return; }
	if ! ended; then echo running
	elif [ -s "$D/exit" ]; then read -r rc end < "$D/exit"; echo "exit $rc ${end:-$(stat -c %Y "$D/exit")}"
	else echo lost; fi
	[ -e "$D/cancelled" ] && echo cancelled
	st=; [ -e "$D/started" ] && read -r st < "$D/started"
	echo "started ${st:-$(stat -c %Y "$D/runner" 2>/dev/null)}"
	echo "now $(date +%s)"
	printf 'progress '; tail -c 512 "$D/progress" 2>/dev/null | hex; echo
	printf 'out '; tail -c 3073 "$D/out" 2>/dev/null | hex; echo
	echo "progressed $(stat -c %Y "$D/progress" 2>/dev/null)"
}
cancel() {
	[ -d "$D" ] && [ ! -s "$D/exit" ] || return 0
	: > "$D/cancelled"
	if alive && read -r g < "$D/pgid" 2>/dev/null; then kill -s KILL -- "-$g" 2>/dev/null; fi
}
supersede() {
	me=$D
	for D in "${me%-*}"-????????????????; do
		[ "$D" = "$me" ] || [ ! -d "$D" ] && continue
		if ended; then rm -rf "$D"; else cancel; fi
	done
}
`

// prelude starts the state scripts: the step directory is $1.
const prelude = "set -u\nD=$1\n" + stateFuncs

// runner is the launched exec's process. It claims the step directory
// $STEP_DIR (mkdir: at most one runner per key, ever), runs "$@" in a session
// of its own with its output's tail kept, records the exit code, kills what
// the step left in its group, prints the state it ended in (the launch's
// inline answer, with no fork on success, and no times: its caller has its own) and reaps whatever it inherited
// before it exits. The step checks for a Cancel after recording its group,
// which Cancel records before it reads the group: one of the two sees the
// other. With STEP_SUPERSEDE=1 it also cancels the steps of its ID still
// running in the container and removes those ended, beside the step (which
// waits for them where they share a lock). Every fork costs milliseconds on a
// busy host, and a data operation's latency counts them: builtins where they
// do.
const runner = "set -u\nD=$STEP_DIR\n" + stateFuncs + `st22() { shift 21; T=$1; }
mkdir "$D" 2>/dev/null || { mkdir -p "${D%/*}" && mkdir "$D" 2>/dev/null; } || exit 86
read -r s < /proc/$$/stat; st22 $s; echo "$$ $T" > "$D/runner"
: > "$D/progress"
if [ "${STEP_SUPERSEDE:-}" = 1 ]; then supersede & fi
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
echo "$rc" > "$D/exit"
echo "exit $rc"
[ -e "$D/cancelled" ] && echo cancelled
if [ -s "$D/progress" ]; then
	printf 'progress '; tail -c 512 "$D/progress" | hex; echo
	echo "progressed $(stat -c %Y "$D/progress")"
fi
if [ "$rc" != 0 ] || [ "${STEP_OUT:-}" = 1 ]; then printf 'out '; tail -c 3073 "$D/out" | hex; echo; fi
while kids; do sleep 0.1; done
exit 87`

// observeScript prints the state of step $1 after waiting up to $3×50ms for
// it to appear and $2×50ms for its end.
const observeScript = prelude + `observe "$3" "$2"`

// cancelScript kills step $1's process group unless it has ended, marks it
// cancelled, and prints its state after waiting up to $2×50ms for its end
// ($3×50ms first for a step just launched to appear).
const cancelScript = prelude + `appears "$3"
cancel
observe 0 "$2"`

// forgetScript removes step $1's directory once it has ended, so that its
// key may run again; a step still running is left, and its state printed
// ($3×50ms first for a step just launched to appear).
const forgetScript = prelude + `appears "$3"
[ -d "$D" ] && ended && rm -rf "$D"
observe 0 0`
