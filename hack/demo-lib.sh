# Shared by hack/demo.sh and hack/demo-stop.sh (sourced, not run).
# shellcheck shell=bash

DEMO_DIR="$ROOT/bin/demo"
DEMO_ID="${SANDBOX_DEMO_ID:-sandbox-demo}"
# Every container and network the demo creates carries this label.
DEMO_LABEL="sandbox.roboco.io/demo=$DEMO_ID"
KUBECONFIG_PATH="$DEMO_DIR/kubeconfig"

log() { printf '[demo %3ds] %s\n' "$((SECONDS - ${START:-0}))" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
step() { printf '\n==> [%3ds] %s\n' "$((SECONDS - ${START:-0}))" "$*"; }

# kc runs the built kubectl against the demo's control plane.
kc() { "$KUBECTL_BIN" --kubeconfig "$KUBECONFIG_PATH" "$@"; }

api_ready() { [ -s "$KUBECONFIG_PATH" ] && kc get --raw /readyz >/dev/null 2>&1; }

# wait_for SECONDS WHAT CMD...: polls CMD every 0.2s.
wait_for() {
	local limit="$1" deadline=$((SECONDS + $1)) what="$2"
	shift 2
	until "$@"; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			log "$what did not answer within ${limit}s"
			return 1
		fi
		sleep 0.2
	done
}

network_label() { docker network inspect -f '{{index .Labels "sandbox.roboco.io/demo"}}' "$1" 2>/dev/null || true; }
container_label() { docker container inspect -f '{{index .Config.Labels "sandbox.roboco.io/demo"}}' "$1" 2>/dev/null || true; }

# manager_image_flags turns hack/images.sh --print (POSTGRES_IMAGE=ref,
# POSTGRES_KITCHEN_IMAGE=ref, ...) into the manager's image flags.
manager_image_flags() {
	local key ref engine
	while IFS='=' read -r key ref; do
		case "$key" in
		*_KITCHEN_IMAGE) engine="${key%_KITCHEN_IMAGE}"; echo "--${engine,,}-kitchen-sink-image=$ref" ;;
		*_IMAGE) engine="${key%_IMAGE}"; echo "--${engine,,}-image=$ref" ;;
		esac
	done
}

# pid_is PIDFILE EXE: the pid in PIDFILE when that process runs EXE.
pid_is() {
	local pid
	[ -f "$1" ] || return 1
	pid="$(cat "$1")"
	[ -n "$pid" ] && [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$2" ] && echo "$pid"
}

# stop_pid PID SECONDS: SIGTERM, then SIGKILL after SECONDS.
stop_pid() {
	local pid="$1" deadline=$((SECONDS + $2))
	kill -TERM "$pid" 2>/dev/null || return 0
	while kill -0 "$pid" 2>/dev/null; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			kill -KILL "$pid" 2>/dev/null || true
			return 0
		fi
		sleep 0.2
	done
}
