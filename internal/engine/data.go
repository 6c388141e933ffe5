package engine

import (
	"maps"
	"strconv"
	"time"
)

// DataOp is one operation on a service's data, run inside its container.
type DataOp string

const (
	// OpReset returns the data to its initial snapshot, else to empty (a
	// snapshotless engine empties it and runs the init scripts again).
	OpReset DataOp = "reset"
	// OpCheckpoint records the current data under a name, replacing the
	// checkpoint of that name; it answers the container's checkpoints.
	OpCheckpoint DataOp = "checkpoint"
	// OpRestore returns the data to the checkpoint of a name.
	OpRestore DataOp = "restore"
	// OpDelete removes the checkpoint of a name; it answers the container's
	// checkpoints.
	OpDelete DataOp = "delete-checkpoint"
	// OpList answers the container's checkpoints.
	OpList DataOp = "list"
	// OpInitial records the initial snapshot, once per container: the state a
	// reset returns to, taken when the service first answers with its init
	// scripts run and its features active.
	OpInitial DataOp = "initial"
)

// DataRunner is how an engine works on its data inside its container.
type DataRunner struct {
	// Ops is a sh program that does $OP and exits 0,
	// or prints why not (the engine's words) on stderr and exits non-zero. It
	// runs with ADDR and PORT set, after dataPrelude (fits, the lock).
	Ops string
	// Env carries the password, never the command line.
	Env map[string]string
	// NoSnapshots, when set, says why this engine or image cannot checkpoint or
	// restore: such requests fail at once, and a reset empties the data and runs
	// the init scripts again.
	NoSnapshots string
}

// DataDone is what a data step prints last when it did its operation.
const DataDone = "sandbox-data-done"

// dataPrelude runs before every engine's Ops: one operation at a time in a
// container, even across a manager that restarted while its exec went on
// (its next attempt waits, then passes: the container keeps the last request
// it did, MARK, which a status lost with its object cannot repeat; another
// request after it runs, even one with an earlier request's id or key; the
// initial snapshot keeps a mark of its own). A container of an earlier
// release, which kept each "op-id" done as a file of its own, is read by those
// files until it does a request under this one.
// room and fits refuse an operation that would take the container past 90%
// of its memory limit (the data lives on tmpfs, charged to the container),
// measured as docker stats does (usage less inactive file cache).
const dataPrelude = `set -u
OP=$SANDBOX_DATA_OP REQ=$SANDBOX_DATA_REQUEST NAME=${SANDBOX_DATA_NAME:-latest} MAX=${SANDBOX_DATA_MAX:-32}
case $NAME in *[!a-z0-9-]*|-*|*-) echo "a checkpoint name is lowercase letters, digits and '-': $NAME" >&2; exit 2 ;; esac
exec 9>/tmp/sandbox-data.lock
flock 9
MARK=/tmp/.sandbox-data-request
[ "$OP" = initial ] && MARK=/tmp/.sandbox-data-initial
[ "$OP" = list ] && MARK=/dev/null # not a request: it leaves the last one as it is
if [ -e "$MARK" ]; then
	LAST=; read -r LAST < "$MARK"
	[ "$LAST" = "$REQ" ] && { echo ` + DataDone + `; exit 0; }
elif [ -e "/tmp/.sandbox-data-$OP-${REQ%%:*}" ]; then
	echo ` + DataDone + `; exit 0
fi
# room sets ROOM, the bytes the container may still take before 90% of its
# memory limit, and MEM, that in words. Builtins only: a fork in a busy
# container costs milliseconds.
room() {
	if [ -r /sys/fs/cgroup/memory.max ]; then
		read -r lim < /sys/fs/cgroup/memory.max; read -r use < /sys/fs/cgroup/memory.current
		stat=/sys/fs/cgroup/memory.stat key=inactive_file
	else
		read -r lim < /sys/fs/cgroup/memory/memory.limit_in_bytes; read -r use < /sys/fs/cgroup/memory/memory.usage_in_bytes
		stat=/sys/fs/cgroup/memory/memory.stat key=total_inactive_file
	fi
	while read -r k v; do [ "$k" = "$key" ] && use=$((use - v)); done < "$stat"
	ROOM=$((1 << 62)) MEM="the container has no memory limit"
	[ "$lim" = max ] || [ "$lim" -ge $((1 << 62)) ] && return 0
	ROOM=$((lim - lim / 10 - use))
	MEM="the container uses $(((use + 1048575) / 1048576)) MiB of its $(((lim + 1048575) / 1048576)) MiB limit and keeps 10% free (its data lives on tmpfs); raise the service's resources.memory"
}
# toomany N exits 3 when a checkpoint of a new name would make N+1 of them.
toomany() {
	[ "$1" -lt "$MAX" ] && return 0
	echo "checkpoint $NAME: the service keeps at most $MAX checkpoints (spec.services[].maxCheckpoints, at most the manager's --max-checkpoints) and holds $1: delete one (action DeleteCheckpoint) or take it under a name it holds" >&2
	exit 3
}
# fits BYTES WHAT exits 3 when BYTES more would not fit.
fits() {
	room
	[ "$1" -le "$ROOM" ] && return 0
	echo "$2 needs $((($1 + 1048575) / 1048576)) MiB of memory: $MEM" >&2
	exit 3
}
`

// DataStep is the step that does e's data operations at addr; DataEnv adds
// which one, for which request, when it runs (so it can be prepared ahead,
// dockerdriver.PrepareExec). files are the service's init scripts (keys
// under InitDir), run again by a snapshotless engine's reset, each within
// perScript.
func DataStep(e Engine, password, addr string, files []string, perScript time.Duration) Step {
	d := e.Data(password, addr)
	env := maps.Clone(d.Env)
	env["ADDR"], env["PORT"] = addr, strconv.Itoa(e.Port())
	script := dataPrelude + d.Ops
	timeout := 2 * time.Minute
	if d.NoSnapshots != "" && len(files) > 0 {
		r := e.Init(password, addr)
		maps.Copy(env, r.Env)
		env["RUN_ONE"], env["T"] = r.RunOne, strconv.Itoa(max(1, int(perScript.Seconds())))
		script += "\n" + runScripts + "\n[ \"$OP\" = reset ] && { run_scripts \"$@\" >&2 || exit 1; }"
		timeout += time.Duration(len(files)) * perScript
	}
	script += "\n" + dataMark
	return Step{
		Argv:    append([]string{"sh", "-c", script, "data"}, files...),
		Env:     env,
		Timeout: timeout,
		Expect:  DataDone,
	}
}

// dataMark ends a data step that did its operation: the container keeps the
// request as its last (see dataPrelude).
const dataMark = `printf '%s\n' "$REQ" > "$MARK"
echo ` + DataDone

// DataCall is one data operation asked of a container.
type DataCall struct {
	Op DataOp
	// Request is the request's key (DataRequest.Key, starting with its id):
	// done once in a row per container.
	Request string
	// Checkpoint names the checkpoint Op takes, restores or deletes (empty:
	// latest); Max is how many the service may keep (a checkpoint of a new
	// name past it fails, naming the limit).
	Checkpoint string
	Max        int
}

// Env is what a DataStep run needs besides its own environment.
func (c DataCall) Env() map[string]string {
	env := map[string]string{"SANDBOX_DATA_OP": string(c.Op), "SANDBOX_DATA_REQUEST": c.Request}
	if c.Checkpoint != "" {
		env["SANDBOX_DATA_NAME"] = c.Checkpoint
	}
	if c.Max > 0 {
		env["SANDBOX_DATA_MAX"] = strconv.Itoa(c.Max)
	}
	return env
}

// Lists says whether op answers the container's checkpoints.
func (op DataOp) Lists() bool { return op == OpCheckpoint || op == OpDelete || op == OpList }

// Snapshots says whether e can checkpoint and restore, and why not.
func Snapshots(e Engine) (ok bool, why string) {
	why = e.Data("", "").NoSnapshots
	return why == "", why
}
