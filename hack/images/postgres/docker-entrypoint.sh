#!/usr/bin/env bash
# Entrypoint of the sandbox test image for PostgreSQL (Debian's postgresql-15).
#
# It honours the contract of the official postgres image's docker-entrypoint.sh:
#   POSTGRES_USER (default postgres), POSTGRES_PASSWORD (required unless
#   POSTGRES_HOST_AUTH_METHOD=trust), POSTGRES_DB (default = user),
#   POSTGRES_INITDB_ARGS, POSTGRES_HOST_AUTH_METHOD (default scram-sha-256),
#   the *_FILE variants, /docker-entrypoint-initdb.d/*.{sh,sql,sql.gz}.
# and, like it, it starts the server TWICE on first start: a temporary server
# on the unix socket only (listen_addresses='') creates the user and database
# and runs the init scripts; it is stopped, and only then the real server is
# exec'd on TCP. A readiness probe that only asks the socket passes during the
# temporary phase and hands out a dead endpoint; that is the trap this image
# reproduces on purpose.
#
# Test-only knob: SANDBOX_TEST_INIT_DELAY=<seconds> sleeps while the temporary
# server runs, to widen that window.
set -Eeo pipefail

log() { printf '%s [entrypoint] %s\n' "$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)" "$*" >&2; }

# file_env VAR [DEFAULT]: VAR or VAR_FILE (not both), as the official image does.
file_env() {
	local var="$1" fileVar="${1}_FILE" def="${2:-}" val
	if [ "${!var:-}" ] && [ "${!fileVar:-}" ]; then
		log "error: both $var and $fileVar are set (but are exclusive)"
		exit 1
	fi
	val="$def"
	if [ "${!var:-}" ]; then
		val="${!var}"
	elif [ "${!fileVar:-}" ]; then
		val="$(<"${!fileVar}")"
	fi
	export "$var"="$val"
	unset "$fileVar"
}

# A first argument that looks like a flag means "postgres <flags>".
if [ "${1:0:1}" = '-' ]; then
	set -- postgres "$@"
fi

if [ "$1" != 'postgres' ]; then
	exec "$@"
fi

: "${PGDATA:=/var/lib/postgresql/data}"
export PGDATA

if [ "$(id -u)" = '0' ]; then
	# Note: the data dir is usually a fresh tmpfs owned by root.
	mkdir -p "$PGDATA" /var/run/postgresql
	chown postgres:postgres "$PGDATA" /var/run/postgresql
	chmod 00700 "$PGDATA"
	chmod 03775 /var/run/postgresql
	# Note: setpriv keeps the environment; HOME follows the user, as with gosu.
	HOME="$(getent passwd postgres | cut -d: -f6)"; export HOME
	exec setpriv --reuid=postgres --regid=postgres --init-groups "$BASH_SOURCE" "$@"
fi

if [ ! -s "$PGDATA/PG_VERSION" ]; then
	file_env POSTGRES_PASSWORD
	file_env POSTGRES_USER postgres
	file_env POSTGRES_DB "$POSTGRES_USER"
	file_env POSTGRES_INITDB_ARGS
	: "${POSTGRES_HOST_AUTH_METHOD:=scram-sha-256}"

	if [ -z "$POSTGRES_PASSWORD" ] && [ "$POSTGRES_HOST_AUTH_METHOD" != 'trust' ]; then
		cat >&2 <<-'EOM'
		Error: Database is uninitialized and superuser password is not specified.
		       You must specify POSTGRES_PASSWORD to a non-empty value for the
		       superuser. For example, "-e POSTGRES_PASSWORD=password" on "docker run".
		       (or set POSTGRES_HOST_AUTH_METHOD=trust, which is unsafe)
		EOM
		exit 1
	fi

	log "initdb (user=$POSTGRES_USER db=$POSTGRES_DB)"
	pwfile=
	if [ -n "$POSTGRES_PASSWORD" ]; then
		pwfile="$(mktemp)"
		printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
	fi
	# shellcheck disable=SC2086 # POSTGRES_INITDB_ARGS is a word list on purpose
	initdb --username="$POSTGRES_USER" ${pwfile:+--pwfile="$pwfile"} \
		--auth-local=trust --auth-host="$POSTGRES_HOST_AUTH_METHOD" \
		$POSTGRES_INITDB_ARGS >/dev/null
	[ -z "$pwfile" ] || rm -f "$pwfile"
	{
		printf '\n# sandbox test image: any host, password auth\n'
		printf 'host all all all %s\n' "$POSTGRES_HOST_AUTH_METHOD"
	} >>"$PGDATA/pg_hba.conf"

	# The temporary server: unix socket only, so nothing on the network can reach it.
	log "starting temporary server (unix socket only)"
	PGUSER="$POSTGRES_USER" pg_ctl -D "$PGDATA" -w -t 60 \
		-o "-c listen_addresses='' -p ${PGPORT:-5432}" start

	psql_init=(psql -v ON_ERROR_STOP=1 --no-password --no-psqlrc --username "$POSTGRES_USER" --dbname postgres -q)
	if [ "$POSTGRES_DB" != 'postgres' ]; then
		log "creating database $POSTGRES_DB"
		"${psql_init[@]}" --set db="$POSTGRES_DB" <<-'EOSQL'
			CREATE DATABASE :"db";
		EOSQL
	fi
	psql_init=(psql -v ON_ERROR_STOP=1 --no-password --no-psqlrc --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" -q)
	for f in /docker-entrypoint-initdb.d/*; do
		[ -e "$f" ] || continue
		case "$f" in
			*.sh)
				if [ -x "$f" ]; then log "running $f"; "$f"; else log "sourcing $f"; . "$f"; fi ;;
			*.sql) log "running $f"; "${psql_init[@]}" -f "$f" ;;
			*.sql.gz) log "running $f"; gunzip -c "$f" | "${psql_init[@]}" ;;
			*) log "ignoring $f" ;;
		esac
	done

	if [ -n "${SANDBOX_TEST_INIT_DELAY:-}" ] && [ "$SANDBOX_TEST_INIT_DELAY" != 0 ]; then
		log "SANDBOX_TEST_INIT_DELAY: keeping the temporary server up for ${SANDBOX_TEST_INIT_DELAY}s"
		sleep "$SANDBOX_TEST_INIT_DELAY"
	fi

	log "stopping temporary server"
	pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
	unset PGPASSWORD POSTGRES_PASSWORD
	log "PostgreSQL init process complete; ready for start up."
fi

exec "$@"
