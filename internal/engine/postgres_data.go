package engine

// Postgres keeps its snapshots as databases beside the published one, copied
// with CREATE DATABASE … TEMPLATE (STRATEGY FILE_COPY: a file copy on tmpfs,
// tens of milliseconds for tens of MB). A copy becomes the published database,
// or a snapshot, by two renames in one transaction: whatever cuts the
// operation short, the name holds the old data or the new, never a part. The
// published database's sessions are cut, and new ones held off, while it is
// copied (a template may have none) or replaced; snapshots take no
// connections. psql logs in as the published user (a superuser, as in the
// official image) over the unix socket, which the image trusts.
const (
	pgSnapshotCheckpoint = "_sandbox_checkpoint" // latest, as before named checkpoints
	pgSnapshotNamed      = "_sandbox_ckpt_"      // and the name
	pgSnapshotInitial    = "_sandbox_initial"
)

// pgCheckpoints selects the checkpoint databases of pg_database.
const pgCheckpoints = `(datname = '` + pgSnapshotCheckpoint + `' OR datname LIKE '\_sandbox\_ckpt\_%')`

// postgresDeleteSQL drops checkpoint :dst.
const postgresDeleteSQL = `SELECT EXISTS (SELECT FROM pg_database WHERE datname = :'dst') AS has_dst \gset
\if :has_dst
DROP DATABASE :"dst";
\else
DO $$ BEGIN RAISE EXCEPTION 'no checkpoint named % in this container (a checkpoint lives in its container, and goes with it)', current_setting('sandbox.name'); END $$;
\endif`

// postgresListSQL lists the checkpoints (CheckpointsHeader): the time a
// checkpoint's comment records, else (taken before names) its directory's.
const postgresListSQL = `SELECT format('checkpoint %s %s %s', CASE datname WHEN '` + pgSnapshotCheckpoint + `' THEN 'latest' ELSE substr(datname, ` + "15" + `) END,
	coalesce(substring(shobj_description(oid, 'pg_database') FROM '^sandbox checkpoint ([0-9]+)$'),
		extract(epoch FROM (pg_stat_file('base/' || oid)).modification)::bigint::text),
	pg_database_size(oid)) FROM pg_database WHERE ` + pgCheckpoints + ` ORDER BY datname;`

// postgresData runs one psql session per operation (each session is a
// backend start, ~50 ms on a busy host): the shell picks the databases and
// measures the memory the container has left; postgresCopySQL does the rest.
// Its sessions name the operation (application_name "sandbox-data <op>
// <request id>"): a step cancelled by a new request (its client killed, its
// backend perhaps still waiting for a lock an agent's session holds) leaves a
// backend the next operation finds and ends (pgDataSessionsEnd).
const postgresData = `export PGAPPNAME="` + pgDataApp + ` $OP ${REQ%%:*}"
PG() { psql -X -q -w -tA -v ON_ERROR_STOP=1 -p "$PORT" -U ` + postgresUser + ` -d postgres "$@"; }
ck=` + pgSnapshotNamed + `$NAME
[ "$NAME" = latest ] && ck=` + pgSnapshotCheckpoint + `
src= dst= what= copy=true del=false list=false
case $OP in
checkpoint) src=` + postgresDB + ` dst=$ck what="a checkpoint ($NAME)" list=true ;;
initial) src=` + postgresDB + ` dst=` + pgSnapshotInitial + ` what="the initial snapshot" ;;
restore) src=$ck dst=` + postgresDB + ` what="restoring checkpoint $NAME" ;;
reset) dst=` + postgresDB + ` what="a reset" ;;
delete-checkpoint) dst=$ck copy=false del=true list=true ;;
list) copy=false list=true ;;
*) echo "unknown operation $OP" >&2; exit 1 ;;
esac
room
allow=false
[ "$dst" = ` + postgresDB + ` ] && allow=true
exec 3>&1
if ! out=$(PG -v op="$OP" -v src="$src" -v dst="$dst" -v name="$NAME" -v max="$MAX" -v what="$what" -v room="$ROOM" -v mem="$MEM" \
	-v allow="$allow" -v copy="$copy" -v del="$del" -v list="$list" 2>&1 >&3 <<'SQL'
\o /dev/null
SET client_min_messages = warning;
` + pgDataSessionsEnd + `
SELECT set_config('sandbox.op', :'op', false), set_config('sandbox.name', :'name', false), set_config('sandbox.max', :'max', false),
	set_config('sandbox.dst', :'dst', false);
\if :del
` + postgresDeleteSQL + `
\elif :copy
` + postgresCopySQL + `
\endif
\if :list
\o
\echo ` + CheckpointsHeader + `
` + postgresListSQL + `
\endif
SQL
); then
	PG -c "ALTER DATABASE ` + postgresDB + ` ALLOW_CONNECTIONS true" >/dev/null 2>&1
	PG -c "DROP DATABASE IF EXISTS _sandbox_next" >/dev/null 2>&1
	line=$(printf '%s\n' "$out" | grep -m1 -E 'ERROR|FATAL' || printf '%s\n' "$out" | tail -n1)
	printf '%s\n' "$line" | sed 's/^psql:[^ ]* //; s/^ERROR: *//' >&2
	exit 1
fi`

// pgDataApp starts the application_name of a data operation's sessions.
const pgDataApp = "sandbox-data"

// pgDataSessionsEnd ends the sessions of earlier data operations: one runs at
// a time in a container (the prelude's lock), so any other is left by a step
// killed while its backend waited, and would go on, or hold its locks, once
// that wait ended.
const pgDataSessionsEnd = `SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity
	WHERE application_name LIKE '` + pgDataApp + ` %' AND pid <> pg_backend_pid();`

// postgresCopySQL makes :dst a copy of :src (reset: the initial snapshot, else
// template1, as the image made the database), unless :op is initial and the
// snapshot exists. It refuses a copy larger than :room bytes.
const postgresCopySQL = `SET client_min_messages = warning;
` + pgDataSessionsEnd + `
SELECT :'op' = 'initial' AND EXISTS (SELECT FROM pg_database WHERE datname = :'dst') AS done,
	coalesce(nullif(:'src', ''), (SELECT datname FROM pg_database WHERE datname = '` + pgSnapshotInitial + `'), 'template1') AS src,
	EXISTS (SELECT FROM pg_database WHERE datname = :'dst') AS has_dst \gset
\if :done
\q
\endif
SELECT set_config('sandbox.src', :'src', false), set_config('sandbox.room', :'room', false),
	set_config('sandbox.what', :'what', false), set_config('sandbox.mem', :'mem', false);
DO $$
DECLARE
	src text := current_setting('sandbox.src');
	size bigint;
	n bigint;
BEGIN
	IF NOT EXISTS (SELECT FROM pg_database WHERE datname = src) THEN
		RAISE EXCEPTION 'no checkpoint named % in this container: take one first (a checkpoint lives in its container, and goes with it)', current_setting('sandbox.name');
	END IF;
	IF current_setting('sandbox.op') = 'checkpoint' AND NOT EXISTS (SELECT FROM pg_database WHERE datname = current_setting('sandbox.dst')) THEN
		n := (SELECT count(*) FROM pg_database WHERE ` + pgCheckpoints + `);
		IF n >= current_setting('sandbox.max')::int THEN
			RAISE EXCEPTION 'checkpoint %: the service keeps at most % checkpoints (spec.services[].maxCheckpoints, at most the manager''s --max-checkpoints) and holds %: delete one (action DeleteCheckpoint) or take it under a name it holds',
				current_setting('sandbox.name'), current_setting('sandbox.max'), n;
		END IF;
	END IF;
	size := pg_database_size(src);
	IF size > current_setting('sandbox.room')::bigint THEN
		RAISE EXCEPTION '% needs % MiB of memory (database %): %', current_setting('sandbox.what'),
			ceil(size / 1048576.0), src, current_setting('sandbox.mem');
	END IF;
END $$;
DROP DATABASE IF EXISTS _sandbox_next;
DROP DATABASE IF EXISTS _sandbox_old;
ALTER DATABASE ` + postgresDB + ` ALLOW_CONNECTIONS false;
SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = '` + postgresDB + `' AND pid <> pg_backend_pid();
CREATE DATABASE _sandbox_next TEMPLATE :"src" STRATEGY FILE_COPY;
\if :list
SELECT format('COMMENT ON DATABASE _sandbox_next IS %L', 'sandbox checkpoint ' || extract(epoch FROM now())::bigint) \gexec
\endif
BEGIN;
\if :has_dst
ALTER DATABASE :"dst" RENAME TO _sandbox_old;
\endif
ALTER DATABASE _sandbox_next RENAME TO :"dst";
COMMIT;
ALTER DATABASE :"dst" ALLOW_CONNECTIONS :allow;
ALTER DATABASE ` + postgresDB + ` ALLOW_CONNECTIONS true;
DROP DATABASE IF EXISTS _sandbox_old;`

// Data: see DataRunner.
func (p postgres) Data(password, _ string) DataRunner {
	return DataRunner{Ops: postgresData, Env: map[string]string{"PGPASSWORD": password, "PGCONNECT_TIMEOUT": "5"}}
}
