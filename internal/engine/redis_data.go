package engine

// Redis keeps its snapshots as RDB files beside its dump file (on tmpfs): a
// checkpoint is SAVE, then a hard link to the dump it wrote (no copy; Redis
// replaces its dump by a rename, never in place). A restore links the snapshot
// as the dump and runs DEBUG RELOAD NOSAVE, which swaps the whole dataset in
// Redis' one thread: clients keep their connections and never see a part. The
// container enables DEBUG for local connections only (enable-debug-command
// local), so redis-cli talks to 127.0.0.1; an agent on the network cannot.
// Note: the dataset is what moves; functions, ACL users and CONFIG SET
// settings are not part of it.
const redisData = `R() { redis-cli --no-auth-warning --raw -h 127.0.0.1 -p "$PORT" "$@"; }
ok() {
	out=$(R "$@" 2>&1)
	[ "$out" = OK ] && return 0
	echo "redis $*: $out" >&2
	exit 1
}
get() { R CONFIG GET "$1" | sed -n 2p; }
dir=$(get dir) db=$(get dbfilename)
[ -n "$dir" ] && [ -n "$db" ] || { echo "redis: CONFIG GET dir and dbfilename failed: $(R PING 2>&1)" >&2; exit 1; }
# save NAME: the current dataset becomes snapshot NAME.
save() {
	fits "$(R INFO memory | sed -n 's/^used_memory_dataset:\([0-9]*\).*/\1/p')" "$2"
	n=0
	while out=$(R SAVE 2>&1); [ "$out" != OK ]; do
		n=$((n + 1))
		case $out in *"in progress"*) [ $n -lt 100 ] && { sleep 0.05; continue; } ;; esac
		echo "redis SAVE: $out" >&2; exit 1
	done
	[ "$dir/$db" -ef "$dir/sandbox-$1.rdb" ] ||
		{ rm -f "$dir/.sandbox-$1.tmp" && ln "$dir/$db" "$dir/.sandbox-$1.tmp" && mv -f "$dir/.sandbox-$1.tmp" "$dir/sandbox-$1.rdb"; } || exit 1
}
# load NAME: snapshot NAME becomes the dataset.
load() {
	[ "$dir/$db" -ef "$dir/sandbox-$1.rdb" ] ||
		{ rm -f "$dir/.sandbox-load.tmp" && ln "$dir/sandbox-$1.rdb" "$dir/.sandbox-load.tmp" && mv -f "$dir/.sandbox-load.tmp" "$dir/$db"; } || exit 1
	ok DEBUG RELOAD NOSAVE
}
case $OP in
checkpoint) save checkpoint "a checkpoint" ;;
initial) [ -e "$dir/sandbox-initial.rdb" ] || save initial "the initial snapshot" ;;
restore)
	[ -e "$dir/sandbox-checkpoint.rdb" ] || { echo "no checkpoint in this container: take one first (a checkpoint lives in its container, and goes with it)" >&2; exit 1; }
	load checkpoint ;;
reset)
	if [ -e "$dir/sandbox-initial.rdb" ]; then load initial; else ok FLUSHALL; fi ;;
*) echo "unknown operation $OP" >&2; exit 1 ;;
esac`

// Data: see DataRunner.
func (redis) Data(password, _ string) DataRunner {
	return DataRunner{Ops: redisData, Env: map[string]string{"REDISCLI_AUTH": password}}
}
