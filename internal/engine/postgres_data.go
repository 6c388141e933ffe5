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
	pgSnapshotCheckpoint = "_sandbox_checkpoint"
	pgSnapshotInitial    = "_sandbox_initial"
)

// postgresData runs one psql session per operation (each session is a
// backend start, ~50 ms on a busy host): the shell picks the databases and
// measures the memory the container has left; postgresCopySQL does the rest.
// Its sessions name the operation (application_name "sandbox-data <op>
// <request id>"): a step cancelled by a new request (its client killed, its
// backend perhaps still waiting for a lock an agent's session holds) leaves a
// backend the next operation finds and ends (pgDataSessionsEnd).
const postgresData = `export PGAPPNAME="` + pgDataApp + ` $OP ${REQ%%:*}"
PG() { psql -X -q -w -tA -v ON_ERROR_STOP=1 -p "$PORT" -U ` + postgresUser + ` -d postgres "$@"; }
case $OP in
checkpoint) src=` + postgresDB + ` dst=` + pgSnapshotCheckpoint + ` what="a checkpoint" ;;
initial) src=` + postgresDB + ` dst=` + pgSnapshotInitial + ` what="the initial snapshot" ;;
restore) src=` + pgSnapshotCheckpoint + ` dst=` + postgresDB + ` what="restoring the checkpoint" ;;
reset) src= dst=` + postgresDB + ` what="a reset" ;;
*) echo "unknown operation $OP" >&2; exit 1 ;;
esac
room
allow=false
[ "$dst" = ` + postgresDB + ` ] && allow=true
if ! out=$(PG -v op="$OP" -v src="$src" -v dst="$dst" -v what="$what" -v room="$ROOM" -v mem="$MEM" -v allow="$allow" 2>&1 >/dev/null <<'SQL'
` + postgresCopySQL + `
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
	set_config('sandbox.what', :'what', false), set_config('sandbox.mem', :'mem', false) \g /dev/null
DO $$
DECLARE
	src text := current_setting('sandbox.src');
	size bigint;
BEGIN
	IF NOT EXISTS (SELECT FROM pg_database WHERE datname = src) THEN
		RAISE EXCEPTION 'no checkpoint in this container: take one first (a checkpoint lives in its container, and goes with it)';
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
