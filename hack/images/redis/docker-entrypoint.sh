#!/usr/bin/env bash
# Entrypoint of the sandbox test image for Redis (Debian's redis-server 7.0), with
# the official redis image's contract: a first argument that is a flag or a .conf
# file means "redis-server <args>"; the server runs as the redis user in /data;
# protected mode is off and it binds all addresses (the official image builds
# redis with protected-mode defaulting to no), so `redis-server --requirepass pw`
# is reachable from other containers and nothing else is.
#
# REDIS_SANDBOX_ARGS (set by derived images, e.g. the kitchen image's module
# loading) is put before the user's arguments, so the user's flags win.
set -Eeo pipefail

if [ "${1#-}" != "$1" ] || [ "${1%.conf}" != "$1" ]; then
	set -- redis-server "$@"
fi

if [ "$1" = 'redis-server' ] && [ "$(id -u)" = '0' ]; then
	# Note: /data is usually a fresh tmpfs owned by root.
	find . \! -user redis -exec chown redis '{}' +
	# Note: setpriv keeps the environment; HOME follows the user, as with gosu.
	HOME="$(getent passwd redis | cut -d: -f6)"; export HOME
	exec setpriv --reuid=redis --regid=redis --init-groups "$BASH_SOURCE" "$@"
fi

if [ "$1" = 'redis-server' ]; then
	shift
	conf=()
	if [ "${1:-}" ] && [ "${1%.conf}" != "$1" ]; then conf=("$1"); shift; fi
	# shellcheck disable=SC2206 # REDIS_SANDBOX_ARGS is a word list on purpose
	set -- redis-server "${conf[@]}" --protected-mode no --bind '* -::*' ${REDIS_SANDBOX_ARGS:-} "$@"
	um="$(umask)"
	if [ "$um" = '0022' ]; then umask 0077; fi
fi

exec "$@"
