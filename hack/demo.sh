#!/usr/bin/env bash
# make demo: the whole product on this machine, from nothing to a Ready Sandbox
# whose credentials work, left running for you to play with.
#
#   1. builds what is missing: the control plane (hack/build-envtest.sh), the
#      engine images in a localhost registry (hack/images.sh), the manager;
#   2. makes sure Docker answers (hack/ensure-docker.sh);
#   3. starts etcd + kube-apiserver + kube-controller-manager (hack/controlplane),
#      kubeconfig in bin/demo/;
#   4. installs the CRD (kubectl apply -k config/crd), creates the demo's Docker
#      network, starts the manager against both;
#   5. starts the agent (owner) container, applies a sample, waits for Ready,
#      shows the Sandbox and the Secret's variable names, and connects to every
#      service with the Secret's credentials, as the agent would.
#
# `make demo-stop` (hack/demo-stop.sh) removes all of it, and only it: every
# container and network the demo creates carries the label
# sandbox.roboco.io/demo=<id>, and sandbox containers are removed by the
# controller (or, failing that, by their Sandbox's UID or the manager's instance
# label, sandbox.roboco.io/instance=<id>).
#
# Environment: SANDBOX_DEMO_SAMPLE (default config/samples/sandbox_v1alpha1_trio.yaml),
# SANDBOX_DEMO_ID (default sandbox-demo: the network's name and the label's value),
# SANDBOX_DEMO_METRICS_PORT / SANDBOX_DEMO_HEALTH_PORT (default 18080 / 18081),
# SANDBOX_DEMO_TIMEOUT (default 300s: apply to Ready).
set -Eeuo pipefail
shopt -s inherit_errexit

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=demo-lib.sh
. "$ROOT/hack/demo-lib.sh"

SAMPLE="${SANDBOX_DEMO_SAMPLE:-config/samples/sandbox_v1alpha1_trio.yaml}"
METRICS_ADDR="127.0.0.1:${SANDBOX_DEMO_METRICS_PORT:-18080}"
HEALTH_ADDR="127.0.0.1:${SANDBOX_DEMO_HEALTH_PORT:-18081}"
READY_TIMEOUT="${SANDBOX_DEMO_TIMEOUT:-300s}"

START=$SECONDS
trap 'rc=$?; if [ "$rc" != 0 ]; then log "FAILED after $((SECONDS - START))s (exit $rc). Logs: $DEMO_DIR/*.log; clean up with make demo-stop"; fi' EXIT

[ -f "$SAMPLE" ] || die "no sample $SAMPLE"
SANDBOX="$(awk '$1 == "name:" { print $2; exit }' "$SAMPLE")"
AGENT="$(awk '$1 == "agentID:" { print $2; exit }' "$SAMPLE")"
[ -n "$SANDBOX" ] && [ -n "$AGENT" ] || die "cannot read metadata.name and spec.agentID from $SAMPLE"

if [ -e "$DEMO_DIR/state.env" ]; then
	step "A previous demo is still set up: stopping it first"
	"$ROOT/hack/demo-stop.sh"
fi
mkdir -p "$DEMO_DIR"

# ---------------------------------------------------------------- build and machine
step "Docker engine"
"$ROOT/hack/ensure-docker.sh"
docker version -f 'Docker {{.Server.Version}} (API {{.Server.APIVersion}})'

step "Control-plane binaries and engine images (the first time: about 12 minutes, side by side)"
registry_was_up=0
REG="${SANDBOX_REGISTRY:-localhost:5001}"
if curl -fsS -m 3 -o /dev/null "http://$REG/v2/" 2>/dev/null; then registry_was_up=1; fi
# Note: the image build waits mostly on the Debian mirror and Docker, the
# control-plane build on the CPU: together they take little more than the longer.
"$ROOT/hack/images.sh" >"$DEMO_DIR/images.log" 2>&1 &
images_pid=$!
ASSETS="$("$ROOT/hack/build-envtest.sh")"
echo "control plane: $ASSETS"
KUBECTL_BIN="$ASSETS/kubectl"
if ! wait "$images_pid"; then
	tail -30 "$DEMO_DIR/images.log" >&2
	die "hack/images.sh failed; see $DEMO_DIR/images.log"
fi
sed -n 's/^\[images *[0-9]*s\] //p' "$DEMO_DIR/images.log" | grep -E '^(built:|registry)' || true
declare -A IMAGE
while IFS='=' read -r key ref; do IMAGE[$key]="$ref"; done < <("$ROOT/hack/images.sh" --print)
mapfile -t IMAGE_FLAGS < <("$ROOT/hack/images.sh" --print | manager_image_flags)
printf '  %s\n' "${IMAGE_FLAGS[@]}"

step "Manager and control-plane launcher"
CGO_ENABLED=0 go build -o "$ROOT/bin/manager" ./cmd/manager
go build -o "$ROOT/bin/controlplane" ./hack/controlplane
echo "bin/manager, bin/controlplane"

# From here on, everything started is recorded for demo-stop.
{
	echo "DEMO_ID=$DEMO_ID"
	echo "ASSETS=$ASSETS"
	echo "REGISTRY_STARTED=$((1 - registry_was_up))"
} >"$DEMO_DIR/state.env"

# ---------------------------------------------------------------- control plane
step "Control plane (etcd + kube-apiserver)"
setsid "$ROOT/bin/controlplane" --assets "$ASSETS" --kubeconfig "$KUBECONFIG_PATH" \
	--state-dir "$DEMO_DIR/state" >"$DEMO_DIR/controlplane.log" 2>&1 </dev/null &
echo $! >"$DEMO_DIR/controlplane.pid"
wait_for 240 "the control plane" api_ready || { tail -20 "$DEMO_DIR/controlplane.log" >&2; die "the control plane did not come up"; }
head -1 "$DEMO_DIR/controlplane.log"

step "CRD"
kc apply --server-side -k config/crd
kc wait --for=condition=Established --timeout=60s crd/sandboxes.sandbox.roboco.io

# ---------------------------------------------------------------- Docker network and manager
step "Docker network $DEMO_ID"
if docker network inspect "$DEMO_ID" >/dev/null 2>&1; then
	[ "$(network_label "$DEMO_ID")" = "$DEMO_ID" ] ||
		die "a Docker network named $DEMO_ID exists and is not the demo's; set SANDBOX_DEMO_ID to another name"
	echo "reusing it"
else
	docker network create --label "$DEMO_LABEL" "$DEMO_ID" >/dev/null
	echo "created (label $DEMO_LABEL)"
fi

step "Manager (bin/manager, log $DEMO_DIR/manager.log)"
# Note: --instance because this Docker host may be shared (test runs, other demos):
# the manager then never judges, adopts or sweeps another control plane's containers.
MANAGER_ARGS=(
	--kubeconfig "$KUBECONFIG_PATH"
	--instance "$DEMO_ID"
	--default-network "$DEMO_ID"
	"${IMAGE_FLAGS[@]}"
	--metrics-bind-address "$METRICS_ADDR"
	--health-probe-bind-address "$HEALTH_ADDR"
	--zap-encoder console
)
echo "bin/manager ${MANAGER_ARGS[*]}"
setsid "$ROOT/bin/manager" "${MANAGER_ARGS[@]}" >"$DEMO_DIR/manager.log" 2>&1 </dev/null &
echo $! >"$DEMO_DIR/manager.pid"
manager_ready() { curl -fsS -m 2 -o /dev/null "http://$HEALTH_ADDR/readyz" 2>/dev/null; }
wait_for 30 "the manager's /readyz" manager_ready || { tail -20 "$DEMO_DIR/manager.log" >&2; die "the manager did not become ready"; }
echo "ready: http://$HEALTH_ADDR/readyz, metrics on http://$METRICS_ADDR/metrics"

# ---------------------------------------------------------------- the agent and its Sandbox
OWNER="roboco-agent-$AGENT"
step "Agent container $OWNER (the Sandbox's owner: it lives as long as this container)"
if docker container inspect "$OWNER" >/dev/null 2>&1; then
	[ "$(container_label "$OWNER")" = "$DEMO_ID" ] || die "a container named $OWNER exists and is not the demo's; leaving it alone"
	docker start "$OWNER" >/dev/null
else
	docker run -d --name "$OWNER" --label "$DEMO_LABEL" --network "$DEMO_ID" \
		--entrypoint sleep "${IMAGE[POSTGRES_IMAGE]}" infinity >/dev/null
fi
echo "running on network $DEMO_ID"

step "kubectl apply -f $SAMPLE"
t_apply=$(date +%s.%N)
kc apply -f "$SAMPLE"
kc get sandbox "$SANDBOX" -o jsonpath='{.metadata.uid}{"\n"}' >>"$DEMO_DIR/uids"

step "kubectl wait --for=condition=Ready sandbox/$SANDBOX --timeout=$READY_TIMEOUT"
if ! kc wait --for=condition=Ready "sandbox/$SANDBOX" --timeout="$READY_TIMEOUT"; then
	kc get sandbox "$SANDBOX" -o jsonpath='{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}' >&2 || true
	tail -20 "$DEMO_DIR/manager.log" >&2
	die "sandbox/$SANDBOX did not become Ready within $READY_TIMEOUT"
fi
t_ready=$(date +%s.%N)
apply_to_ready=$(awk -v a="$t_apply" -v b="$t_ready" 'BEGIN { printf "%.1f", b - a }')
echo "Ready ${apply_to_ready}s after kubectl apply"

step "kubectl get sandboxes"
kc get sandboxes -o wide
echo
kc get sandbox "$SANDBOX" -o jsonpath='{range .status.services[*]}{.engine}: container {.containerName} ({.image}), {.host}:{.port}{"\n"}{end}'

SECRET="$(kc get sandbox "$SANDBOX" -o jsonpath='{.status.secretName}')"
step "Secret $SECRET: the variables an agent gets with envFrom (names only)"
kc get secret "$SECRET" -o go-template='{{range $k, $v := .data}}{{$k}}{{"\n"}}{{end}}' | sed 's/^/  /'

# secret_env prints the Secret as an env file; it only ever goes to a pipe.
secret_env() { kc get secret "$SECRET" -o go-template='{{range $k, $v := .data}}{{$k}}={{$v | base64decode}}{{"\n"}}{{end}}'; }
# client IMAGE SCRIPT: runs SCRIPT in a throwaway container of IMAGE on the demo
# network, with the Secret's variables in its environment (as envFrom would).
client() {
	docker run --rm -i --label "$DEMO_LABEL" --network "$DEMO_ID" --env-file <(secret_env) \
		--entrypoint bash "$1" -c "$2"
}

step "Connecting with the Secret's credentials, from a container on $DEMO_ID"
engines="$(kc get sandbox "$SANDBOX" -o jsonpath='{.status.engines}')"
for engine in ${engines//,/ }; do
	case "$engine" in
	postgres)
		client "${IMAGE[POSTGRES_IMAGE]}" '
			set -e
			export PGPASSWORD="$ROBOCO_TEST_DB_PASSWORD"
			psql -h "$ROBOCO_TEST_DB_HOST" -p "$ROBOCO_TEST_DB_PORT" -U "$ROBOCO_TEST_DB_USER" -d "$ROBOCO_TEST_DB_ADMIN_DB" -v ON_ERROR_STOP=1 -Atq -c "
				CREATE TABLE IF NOT EXISTS demo (said text);
				INSERT INTO demo VALUES ('"'"'hello from the demo'"'"');" -c "SELECT '"'"'postgres: '"'"' || split_part(version(), '"'"' on '"'"', 1) || '"'"', read back: '"'"' || said FROM demo LIMIT 1"
			if PGPASSWORD=wrong psql -h "$ROBOCO_TEST_DB_HOST" -p "$ROBOCO_TEST_DB_PORT" -U "$ROBOCO_TEST_DB_USER" -d "$ROBOCO_TEST_DB_ADMIN_DB" -c "select 1" >/dev/null 2>&1; then
				echo "postgres: a wrong password was accepted" >&2; exit 1
			fi
			echo "postgres: a wrong password is refused"'
		;;
	redis)
		client "${IMAGE[REDIS_IMAGE]}" '
			set -e
			export REDISCLI_AUTH="$ROBOCO_TEST_REDIS_PASSWORD"
			r() { redis-cli --no-auth-warning -h "$ROBOCO_TEST_REDIS_HOST" -p "$ROBOCO_TEST_REDIS_PORT" "$@"; }
			[ "$(r SET demo "hello from the demo")" = OK ]
			echo "redis: $(r INFO server | tr -d "\r" | grep "^redis_version:"), read back: $(r GET demo)"
			if [ "$(REDISCLI_AUTH=wrong r PING 2>&1)" = PONG ]; then echo "redis: a wrong password was accepted" >&2; exit 1; fi
			echo "redis: a wrong password is refused"'
		;;
	mongo)
		client "${IMAGE[MONGO_IMAGE]}" '
			set -e
			uri() { echo "mongodb://$ROBOCO_TEST_MONGO_USER:$1@$ROBOCO_TEST_MONGO_HOST:$ROBOCO_TEST_MONGO_PORT/?authSource=$ROBOCO_TEST_MONGO_AUTH_DB"; }
			mongosh "$(uri "$ROBOCO_TEST_MONGO_PASSWORD")" --quiet --eval "
				const d = db.getSiblingDB(\"demo\");
				d.notes.insertOne({said: \"hello from the demo\"});
				print(\"mongo: wire version \" + db.hello().maxWireVersion + \", read back: \" + d.notes.findOne().said);"
			if mongosh "$(uri wrong)" --quiet --eval "db.runCommand({ping: 1})" >/dev/null 2>&1; then
				echo "mongo: a wrong password was accepted" >&2; exit 1
			fi
			echo "mongo: a wrong password is refused"'
		;;
	*) echo "$engine: no client in the demo" ;;
	esac
done

total=$((SECONDS - START))
echo "apply_to_ready=$apply_to_ready total=$total" >>"$DEMO_DIR/timings"
cat <<EOF

==> The demo is running (${total}s; kubectl apply to Ready: ${apply_to_ready}s).

Talk to its cluster:
  export KUBECONFIG=$KUBECONFIG_PATH
  alias kubectl=$KUBECTL_BIN
  kubectl get sandboxes
  kubectl describe sandbox $SANDBOX
  kubectl apply -f config/samples/sandbox_v1alpha1_features.yaml   # more samples in config/samples/

A namespace of your own, limited, then gone with everything in it (the control
plane runs kube-controller-manager, as a cluster does):
  kubectl create namespace team-a
  kubectl apply -f config/samples/sandbox_v1alpha1_sandboxquota.yaml
  kubectl get sandboxquota -n team-a
  kubectl delete namespace team-a

Be the agent: a shell in $OWNER (on network $DEMO_ID) with the Secret's
variables in its environment, as envFrom gives them:
  docker exec -it --env-file <(kubectl get secret $SECRET -o go-template='{{range \$k, \$v := .data}}{{\$k}}={{\$v | base64decode}}{{"\\n"}}{{end}}') $OWNER bash
  PGPASSWORD=\$ROBOCO_TEST_DB_PASSWORD psql -h \$ROBOCO_TEST_DB_HOST -U \$ROBOCO_TEST_DB_USER \$ROBOCO_TEST_DB_ADMIN_DB

Logs: $DEMO_DIR/manager.log, $DEMO_DIR/controlplane.log, $DEMO_DIR/state/kube-controller-manager.log
Metrics: curl -s http://$METRICS_ADDR/metrics | grep ^sandbox_

Stop everything the demo started:
  make demo-stop
EOF
