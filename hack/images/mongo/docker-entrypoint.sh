#!/usr/bin/env bash
# Entrypoint of the sandbox test image that stands in for the official mongo image:
# FerretDB (MongoDB wire protocol, SQLite backend) behind a mongod-flag shim, and
# mongosh. It honours the official image's contract:
#   MONGO_INITDB_ROOT_USERNAME / MONGO_INITDB_ROOT_PASSWORD (both or neither; with
#   them authentication is REQUIRED, SCRAM-SHA-256 / SCRAM-SHA-1, user in "admin"),
#   MONGO_INITDB_DATABASE (default test) for /docker-entrypoint-initdb.d/*.{js,sh},
#   the *_FILE variants, data in /data/db, state in /data/configdb.
# Unlike the official image, it never puts the password on a command line.
# and, like it, on first start it runs a TEMPORARY server bound to 127.0.0.1 (and
# the unix socket) only, creates the root user, runs the init scripts, stops it,
# and only then execs the real server on all addresses. A probe that only asks
# localhost passes during that window and hands out a dead endpoint.
#
# Test-only knob: SANDBOX_TEST_INIT_DELAY=<seconds> sleeps while the temporary
# server runs, to widen that window.
set -Eeo pipefail

log() { printf '%s [entrypoint] %s\n' "$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)" "$*" >&2; }

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

if [ "${1:0:1}" = '-' ]; then
	set -- mongod "$@"
fi
if [ "$1" != 'mongod' ]; then
	exec "$@"
fi

if [ "$(id -u)" = '0' ]; then
	# Note: /data/db and /data/configdb are usually fresh tmpfs mounts owned by root.
	mkdir -p /data/db /data/configdb
	chown mongodb:mongodb /data/db /data/configdb
	# Note: setpriv keeps the environment; HOME follows the user, as with gosu.
	HOME="$(getent passwd mongodb | cut -d: -f6)"; export HOME
	exec setpriv --reuid=mongodb --regid=mongodb --init-groups "$BASH_SOURCE" "$@"
fi

file_env MONGO_INITDB_ROOT_USERNAME
file_env MONGO_INITDB_ROOT_PASSWORD
: "${MONGO_INITDB_DATABASE:=test}"
if { [ -n "$MONGO_INITDB_ROOT_USERNAME" ] && [ -z "$MONGO_INITDB_ROOT_PASSWORD" ]; } \
	|| { [ -z "$MONGO_INITDB_ROOT_USERNAME" ] && [ -n "$MONGO_INITDB_ROOT_PASSWORD" ]; }; then
	log "error: MONGO_INITDB_ROOT_USERNAME and MONGO_INITDB_ROOT_PASSWORD must be set together"
	exit 1
fi

# mongo_init DB [FILE]: connects to the temporary server as the root user (when
# one is configured) and runs FILE with db set to DB, or pings. Note: the
# credentials reach mongosh through its environment, never its command line,
# which every process on the host can read (ps, /proc/*/cmdline).
mongo_init_js='
const u = process.env.SANDBOX_INIT_USER, p = process.env.SANDBOX_INIT_PASSWORD;
const auth = u ? encodeURIComponent(u) + ":" + encodeURIComponent(p) + "@" : "";
const c = connect("mongodb://" + auth + "127.0.0.1:" + process.env.SANDBOX_INIT_PORT + "/admin?directConnection=true&serverSelectionTimeoutMS=2000");
db = c.getSiblingDB(process.env.SANDBOX_INIT_DB);
if (process.env.SANDBOX_INIT_FILE) { load(process.env.SANDBOX_INIT_FILE); } else { quit(c.adminCommand({ping: 1}).ok ? 0 : 2); }
'
mongo_init() {
	SANDBOX_INIT_PORT="$port" SANDBOX_INIT_DB="$1" SANDBOX_INIT_FILE="${2:-}" \
	SANDBOX_INIT_USER="$MONGO_INITDB_ROOT_USERNAME" SANDBOX_INIT_PASSWORD="$MONGO_INITDB_ROOT_PASSWORD" \
		mongosh --nodb --quiet --eval "$mongo_init_js"
}

shift # mongod
userArgs=("$@")
has_arg() {
	local a
	for a in "${userArgs[@]}"; do
		case "$a" in "$1"|"$1"=*) return 0 ;; esac
	done
	return 1
}
dbpath=/data/db
for ((i = 0; i < ${#userArgs[@]}; i++)); do
	case "${userArgs[i]}" in
		--dbpath) dbpath="${userArgs[i+1]}" ;;
		--dbpath=*) dbpath="${userArgs[i]#--dbpath=}" ;;
	esac
done
port=27017
for ((i = 0; i < ${#userArgs[@]}; i++)); do
	case "${userArgs[i]}" in
		--port) port="${userArgs[i+1]}" ;;
		--port=*) port="${userArgs[i]#--port=}" ;;
	esac
done

marker="$dbpath/.sandbox-initialized"
if [ -n "$MONGO_INITDB_ROOT_USERNAME" ] && ! has_arg --noauth; then
	has_arg --auth || userArgs+=(--auth)
fi

if [ ! -e "$marker" ]; then
	shopt -s nullglob
	initFiles=(/docker-entrypoint-initdb.d/*)
	shopt -u nullglob
	if [ -n "$MONGO_INITDB_ROOT_USERNAME" ] || [ "${#initFiles[@]}" -gt 0 ]; then
		log "starting temporary server (127.0.0.1 and unix socket only)"
		# Note: the filtered copy drops any bind flag of the user's for the temporary run.
		filtered=()
		for ((i = 0; i < ${#userArgs[@]}; i++)); do
			case "${userArgs[i]}" in
				--bind_ip|--port) i=$((i + 1)) ;;
				--bind_ip=*|--bind_ip_all|--port=*) ;;
				*) filtered+=("${userArgs[i]}") ;;
			esac
		done
		tmpArgs=("${filtered[@]}" --bind_ip 127.0.0.1 --port "$port")
		if [ -n "$MONGO_INITDB_ROOT_USERNAME" ]; then
			# FerretDB creates the user (SCRAM credentials) in "admin" before it listens.
			FERRETDB_SETUP_DATABASE=admin \
			FERRETDB_SETUP_USERNAME="$MONGO_INITDB_ROOT_USERNAME" \
			FERRETDB_SETUP_PASSWORD="$MONGO_INITDB_ROOT_PASSWORD" \
				mongod "${tmpArgs[@]}" &
		else
			mongod "${tmpArgs[@]}" &
		fi
		tmpPid=$!

		for ((tries = 30; ; tries--)); do
			if ! kill -0 "$tmpPid" 2>/dev/null; then
				log "error: temporary server exited"; wait "$tmpPid" || true; exit 1
			fi
			# Note: like the official image, wait with a real client, authenticated when
			# a root user is configured (proves that the user can log in).
			if mongo_init admin >/dev/null 2>&1; then
				break
			fi
			if [ "$tries" -le 0 ]; then log "error: temporary server did not answer"; exit 1; fi
			sleep 0.5
		done

		for f in "${initFiles[@]}"; do
			case "$f" in
				*.sh) log "sourcing $f"; . "$f" ;;
				*.js) log "running $f"; mongo_init "$MONGO_INITDB_DATABASE" "$f" ;;
				*) log "ignoring $f" ;;
			esac
		done

		if [ -n "${SANDBOX_TEST_INIT_DELAY:-}" ] && [ "$SANDBOX_TEST_INIT_DELAY" != 0 ]; then
			log "SANDBOX_TEST_INIT_DELAY: keeping the temporary server up for ${SANDBOX_TEST_INIT_DELAY}s"
			sleep "$SANDBOX_TEST_INIT_DELAY"
		fi

		log "stopping temporary server"
		kill -TERM "$tmpPid"
		wait "$tmpPid" || true
		log "MongoDB (FerretDB) init process complete; ready for start up."
	fi
	: >"$marker"
fi

has_arg --bind_ip || has_arg --bind_ip_all || userArgs+=(--bind_ip_all)
unset MONGO_INITDB_ROOT_PASSWORD
exec mongod "${userArgs[@]}"
