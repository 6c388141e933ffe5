package engine

// Redis keeps its snapshots as RDB files beside its dump file (on tmpfs),
// written and read by the server itself. A checkpoint points dbfilename at
// the snapshot, SAVEs (Redis writes a temporary file and renames it: a
// snapshot is whole or the earlier one) and points it back. A restore is one
// MULTI: dbfilename at the snapshot, DEBUG RELOAD NOSAVE (the whole dataset
// swapped in Redis' one thread: clients keep their connections and never see
// a part), dbfilename back. The container allows DEBUG and the protected
// configs (dbfilename) to local connections only, so redis-cli talks to
// 127.0.0.1; an agent on the network cannot. The exec's root has no right to
// the server's files (the container drops DAC_OVERRIDE and FOWNER): a
// deletion runs as the server's user (asowner). Note: the dataset is what
// moves; functions, ACL users and CONFIG SET settings are not part of it.
// Checkpoint latest is sandbox-checkpoint.rdb, the one checkpoint a release
// before names kept; another is sandbox-ckpt-<name>.rdb.
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
ck=sandbox-ckpt-$NAME.rdb
[ "$NAME" = latest ] && ck=sandbox-checkpoint.rdb
fail() { R CONFIG SET dbfilename "$db" >/dev/null 2>&1; echo "redis $1" >&2; exit 1; }
# save FILE WHAT: the current dataset becomes snapshot FILE.
save() {
	need=0
	while IFS=: read -r k v; do [ "$k" = used_memory_dataset ] && need=${v%"$cr"}; done <<EOF
$(R INFO memory)
EOF
	fits "$need" "$2"
	out=$(R CONFIG SET dbfilename "$1" 2>&1) && [ "$out" = OK ] || fail "CONFIG SET dbfilename: $out"
	n=0
	while out=$(R SAVE 2>&1); [ "$out" != OK ]; do
		n=$((n + 1))
		case $out in *"in progress"*) [ $n -lt 200 ] && { sleep 0.05; continue; } ;; esac
		fail "SAVE: $out"
	done
	out=$(R CONFIG SET dbfilename "$db" 2>&1) && [ "$out" = OK ] || fail "CONFIG SET dbfilename: $out"
}
# load FILE: snapshot FILE becomes the dataset, in one transaction.
load() {
	out=$(R 2>&1 <<EOF
MULTI
CONFIG SET dbfilename $1
DEBUG RELOAD NOSAVE
CONFIG SET dbfilename $db
EXEC
EOF
)
	case $out in *ERR*|*rror*|*NOAUTH*|*WRONGPASS*) fail "DEBUG RELOAD NOSAVE: $out" ;; esac
}
# held sets FILES, the checkpoints' files, and N, how many.
held() {
	N=0 FILES=
	for f in "$dir"/sandbox-checkpoint.rdb "$dir"/sandbox-ckpt-*.rdb; do
		[ -e "$f" ] && { N=$((N + 1)); FILES="$FILES $f"; }
	done
}
list() {
	held
	echo ` + CheckpointsHeader + `
	[ "$N" = 0 ] && return 0
	# Note: unquoted, split on blanks: the paths are ours (names are
	# lowercase letters, digits and '-').
	stat -c '%n %Y %s' $FILES | while read -r f t s; do
		n=${f##*/sandbox-ckpt-}
		case $f in */sandbox-checkpoint.rdb) n=latest ;; esac
		echo "checkpoint ${n%.rdb} $t $s"
	done
}
# asowner CMD…: CMD as the owner of the server's directory, its files'.
asowner() {
	u=$(stat -c %u "$dir") g=$(stat -c %g "$dir")
	if command -v setpriv >/dev/null; then setpriv --reuid="$u" --regid="$g" --clear-groups "$@"
	elif command -v su-exec >/dev/null; then su-exec "$u:$g" "$@"
	elif command -v gosu >/dev/null; then gosu "$u:$g" "$@"
	else echo "the image has no setpriv, su-exec or gosu to act as the server's user" >&2; return 1
	fi
}
case $OP in
checkpoint)
	held
	[ -e "$dir/$ck" ] || toomany "$N"
	save "$ck" "a checkpoint ($NAME)"
	list ;;
initial) [ -e "$dir/sandbox-initial.rdb" ] || save sandbox-initial.rdb "the initial snapshot" ;;
restore)
	[ -e "$dir/$ck" ] || { echo "no checkpoint named $NAME in this container: take one first (a checkpoint lives in its container, and goes with it)" >&2; exit 1; }
	load "$ck" ;;
reset)
	if [ -e "$dir/sandbox-initial.rdb" ]; then
		load sandbox-initial.rdb
	else
		out=$(R FLUSHALL 2>&1) && [ "$out" = OK ] || fail "FLUSHALL: $out"
	fi ;;
delete-checkpoint)
	[ -e "$dir/$ck" ] || { echo "no checkpoint named $NAME in this container" >&2; exit 1; }
	out=$(asowner rm -f "$dir/$ck" 2>&1) && [ ! -e "$dir/$ck" ] || fail "removing $ck: $out"
	list ;;
list) list ;;
*) echo "unknown operation $OP" >&2; exit 1 ;;
esac`

// Data: see DataRunner.
func (redis) Data(password, _ string) DataRunner {
	return DataRunner{Ops: redisData, Env: map[string]string{"REDISCLI_AUTH": password}}
}
