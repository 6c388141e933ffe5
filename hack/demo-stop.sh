#!/usr/bin/env bash
# make demo-stop: removes everything `make demo` started, and nothing else.
#
#   1. deletes every Sandbox while the manager runs, so the controller tears the
#      service containers down (stop, remove with volumes) and drops its finalizer;
#   2. stops the manager, then the control plane (etcd and kube-apiserver);
#   3. removes what is left with proof of ownership only: sandbox containers whose
#      sandbox.roboco.io/uid is a demo Sandbox's UID or whose sandbox.roboco.io/instance
#      is the demo's (its manager runs as --instance <id>), and containers and the
#      network labelled sandbox.roboco.io/demo=<id> (the agent container, clients);
#   4. stops the localhost registry if the demo started it.
# Docker itself keeps running. Logs stay in bin/demo/*.log.
set -Eeuo pipefail
shopt -s inherit_errexit

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=demo-lib.sh
. "$ROOT/hack/demo-lib.sh"
START=$SECONDS

ASSETS= REGISTRY_STARTED=0
if [ -f "$DEMO_DIR/state.env" ]; then
	# shellcheck disable=SC1091
	. "$DEMO_DIR/state.env"
	# Note: the demo that is running says which id it used, whatever the environment says now.
	DEMO_LABEL="sandbox.roboco.io/demo=$DEMO_ID"
fi
if [ -z "$ASSETS" ]; then
	ASSETS="$(dirname "$(find "$ROOT/bin/k8s" -name kubectl -type f 2>/dev/null | sort | tail -1)")"
fi
KUBECTL_BIN="$ASSETS/kubectl"
have_docker=1
docker version >/dev/null 2>&1 || { have_docker=0; log "Docker does not answer: containers and the network are left as they are"; }

manager_pid="$(pid_is "$DEMO_DIR/manager.pid" "$ROOT/bin/manager" || true)"
cp_pid="$(pid_is "$DEMO_DIR/controlplane.pid" "$ROOT/bin/controlplane" || true)"

# ---------------------------------------------------------------- 1. Sandboxes, through the controller
touch "$DEMO_DIR/uids" 2>/dev/null || true
if [ -x "$KUBECTL_BIN" ] && api_ready; then
	kc get sandboxes -A -o jsonpath='{range .items[*]}{.metadata.uid}{"\n"}{end}' >>"$DEMO_DIR/uids" || true
	if [ -n "$manager_pid" ]; then
		step "Deleting every Sandbox (the manager tears their containers down)"
		kc delete sandboxes --all -A --wait=true --timeout=120s || log "some Sandboxes were not gone within 120s; removing their containers below"
	else
		log "the manager does not run: the Sandboxes' containers are removed below, by UID"
	fi
fi

# ---------------------------------------------------------------- 2. processes
step "Stopping the manager and the control plane"
if [ -n "$manager_pid" ]; then
	stop_pid "$manager_pid" 20
	echo "manager (pid $manager_pid) stopped"
fi
if [ -n "$cp_pid" ]; then
	# Note: SIGTERM lets envtest stop etcd and kube-apiserver itself.
	stop_pid "$cp_pid" 30
	echo "control plane (pid $cp_pid) stopped"
fi
# etcd or kube-apiserver left behind (the launcher was killed): only those running
# from the demo's binaries with the demo's state directory.
if [ -n "$ASSETS" ] && [ -d "$DEMO_DIR/state" ]; then
	# Note: the API server before etcd, which it would otherwise wait for.
	for bin in kube-apiserver etcd; do
		for proc in /proc/[0-9]*; do
			[ "$(readlink "$proc/exe" 2>/dev/null)" = "$ASSETS/$bin" ] || continue
			if tr '\0' ' ' <"$proc/cmdline" 2>/dev/null | grep -qF -- "$DEMO_DIR/state/"; then
				stop_pid "${proc#/proc/}" 10
				echo "stopped a leftover $bin (pid ${proc#/proc/})"
			fi
		done
	done
fi

# ---------------------------------------------------------------- 3. containers and network
if [ "$have_docker" = 1 ]; then
	step "Removing the demo's containers and network"
	mapfile -t uids < <(sort -u "$DEMO_DIR/uids" 2>/dev/null | grep -v '^$' || true)
	for uid in "${uids[@]}"; do
		mapfile -t ids < <(docker ps -aq --filter label=roboco.sandbox=1 --filter "label=sandbox.roboco.io/uid=$uid")
		if [ "${#ids[@]}" -gt 0 ]; then
			docker rm -f -v "${ids[@]}" >/dev/null
			echo "removed ${#ids[@]} sandbox containers of Sandbox UID $uid"
		fi
	done
	# The demo's manager runs as --instance $DEMO_ID: what carries that label, it created.
	mapfile -t ids < <(docker ps -aq --filter label=roboco.sandbox=1 --filter "label=sandbox.roboco.io/instance=$DEMO_ID")
	if [ "${#ids[@]}" -gt 0 ]; then
		docker rm -f -v "${ids[@]}" >/dev/null
		echo "removed ${#ids[@]} sandbox containers of instance $DEMO_ID"
	fi
	mapfile -t ids < <(docker ps -aq --filter "label=$DEMO_LABEL")
	if [ "${#ids[@]}" -gt 0 ]; then
		docker rm -f -v "${ids[@]}" >/dev/null
		echo "removed ${#ids[@]} demo containers (agent, clients)"
	fi
	if docker network inspect "$DEMO_ID" >/dev/null 2>&1; then
		if [ "$(network_label "$DEMO_ID")" = "$DEMO_ID" ]; then
			if docker network rm "$DEMO_ID" >/dev/null; then
				echo "removed network $DEMO_ID"
			else
				log "network $DEMO_ID is still in use by containers the demo did not create; left in place"
			fi
		else
			log "network $DEMO_ID is not the demo's (no $DEMO_LABEL label); left in place"
		fi
	fi
fi

# ---------------------------------------------------------------- 4. registry, state
if [ "$REGISTRY_STARTED" = 1 ]; then
	reg_pid="$(pid_is "$ROOT/bin/images/registry.pid" "$(readlink -f "$ROOT"/bin/tools/registry-*/registry 2>/dev/null | head -1)" || true)"
	if [ -n "$reg_pid" ]; then
		stop_pid "$reg_pid" 5
		echo "stopped the localhost registry the demo started (pid $reg_pid)"
	fi
fi
rm -rf "$DEMO_DIR/state" "$DEMO_DIR/state.env" "$DEMO_DIR/uids" "$KUBECONFIG_PATH" "$KUBECONFIG_PATH.tmp" \
	"$DEMO_DIR/manager.pid" "$DEMO_DIR/controlplane.pid"
echo
echo "Demo stopped in $((SECONDS - START))s. Logs kept in $DEMO_DIR/. Docker keeps running."
