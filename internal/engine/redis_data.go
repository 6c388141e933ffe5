package engine

// Redis keeps its snapshots as RDB files beside its dump file (on tmpfs),
// written and read by the server itself (the exec's root has no right to
// its files: the container drops DAC_OVERRIDE and FOWNER). A checkpoint points
// dbfilename at the snapshot, SAVEs (Redis writes a temporary file and renames
// it: a snapshot is whole or the earlier one) and points it back. A restore is
// one MULTI: dbfilename at the snapshot, DEBUG RELOAD NOSAVE (the whole
// dataset swapped in Redis' one thread: clients keep their connections and
// never see a part), dbfilename back. The container allows DEBUG and the
// protected configs (dbfilename) to local connections only, so redis-cli
// talks to 127.0.0.1; an agent on the network cannot. Note: the dataset is
// what moves; functions, ACL users and CONFIG SET settings are not part of it.
const redisData = `R() { redis-cli --no-auth-warning --raw -h 127.0.0.1 -p "$PORT" "$@"; }
cr=$(printf '\r')
# Note: here-documents and builtins, not pipes into sed: a fork in a busy
# container costs milliseconds.
db= dir=
while read -r k; do
	read -r v
	case $k in dbfilename) db=$v ;; dir) dir=$v ;; esac
done <<EOF
$(R CONFIG GET dbfilename dir)
EOF
[ -n "$db" ] && [ -n "$dir" ] || { echo "redis: CONFIG GET dbfilename dir failed: $(R PING 2>&1)" >&2; exit 1; }
case $db in sandbox-*) db=dump.rdb ;; esac # an earlier run cut short between its CONFIG SETs
fail() { R CONFIG SET dbfilename "$db" >/dev/null 2>&1; echo "redis $1" >&2; exit 1; }
# save NAME WHAT: the current dataset becomes snapshot NAME.
save() {
	need=0
	while IFS=: read -r k v; do [ "$k" = used_memory_dataset ] && need=${v%"$cr"}; done <<EOF
$(R INFO memory)
EOF
	fits "$need" "$2"
	out=$(R CONFIG SET dbfilename "sandbox-$1.rdb" 2>&1) && [ "$out" = OK ] || fail "CONFIG SET dbfilename: $out"
	n=0
	while out=$(R SAVE 2>&1); [ "$out" != OK ]; do
		n=$((n + 1))
		case $out in *"in progress"*) [ $n -lt 200 ] && { sleep 0.05; continue; } ;; esac
		fail "SAVE: $out"
	done
	out=$(R CONFIG SET dbfilename "$db" 2>&1) && [ "$out" = OK ] || fail "CONFIG SET dbfilename: $out"
}
# load NAME: snapshot NAME becomes the dataset, in one transaction.
load() {
	out=$(R 2>&1 <<EOF
MULTI
CONFIG SET dbfilename sandbox-$1.rdb
DEBUG RELOAD NOSAVE
CONFIG SET dbfilename $db
EXEC
EOF
)
	case $out in *ERR*|*rror*|*NOAUTH*|*WRONGPASS*) fail "DEBUG RELOAD NOSAVE: $out" ;; esac
}
case $OP in
checkpoint) save checkpoint "a checkpoint" ;;
initial) [ -e "$dir/sandbox-initial.rdb" ] || save initial "the initial snapshot" ;;
restore)
	[ -e "$dir/sandbox-checkpoint.rdb" ] || { echo "no checkpoint in this container: take one first (a checkpoint lives in its container, and goes with it)" >&2; exit 1; }
	load checkpoint ;;
reset)
	if [ -e "$dir/sandbox-initial.rdb" ]; then
		load initial
	else
		out=$(R FLUSHALL 2>&1) && [ "$out" = OK ] || fail "FLUSHALL: $out"
	fi ;;
*) echo "unknown operation $OP" >&2; exit 1 ;;
esac`

// Data: see DataRunner.
func (redis) Data(password, _ string) DataRunner {
	return DataRunner{Ops: redisData, Env: map[string]string{"REDISCLI_AUTH": password}}
}
