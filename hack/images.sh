#!/usr/bin/env bash
# Builds the engine images that tests and the demo run, and serves them from a
# local OCI registry so that the controller's pull path is exercised for real.
#
#   hack/images.sh            ensure every image is built and pushed (idempotent)
#   hack/images.sh --print    print the image references as KEY=ref lines
#   hack/images.sh --hashes   print each image's input hash (what decides a rebuild)
#   hack/images.sh --force    rebuild everything (ignores the input hashes)
#
# Environment: SANDBOX_REGISTRY (default localhost:5001; a localhost registry that
# does not answer is started from go-containerregistry's cmd/registry),
# SANDBOX_DEBIAN_MIRROR / SANDBOX_DEBIAN_SECURITY_MIRROR (default: read from apt's
# configuration).
#
# How: one Debian rootfs (mmdebstrap, minbase, docs/man/locales stripped) cached
# under bin/images/ and imported as a local base image; each engine image is a
# Dockerfile under hack/images/<name>/ on top of it. Every image carries the label
# sandbox.roboco.io/input-hash, a hash over its build inputs (and its parent's);
# an image is rebuilt only when that hash changes. See hack/images/README.md.
set -Eeuo pipefail
shopt -s inherit_errexit

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HERE="$ROOT/hack/images"
OUT="$ROOT/bin/images"
REG="${SANDBOX_REGISTRY:-localhost:5001}"
# shellcheck source=images/versions.env
. "$HERE/versions.env"
REGISTRY_BIN="$ROOT/bin/tools/registry-$REGISTRY_VERSION/registry"
TEST_LABEL='sandbox.roboco.io/test-image=1'
HASH_LABEL='sandbox.roboco.io/input-hash'
export DOCKER_BUILDKIT=0 # Note: the classic builder is what Debian's engine 20.10 has without buildx.

# name|ref-suffix|KEY of --print|parent (base or another name)
IMAGES=(
	"postgres|sandbox-test/postgres:15|POSTGRES_IMAGE|base"
	"postgres-kitchen|sandbox-test/postgres-kitchen:15|POSTGRES_KITCHEN_IMAGE|postgres"
	"redis|sandbox-test/redis:7|REDIS_IMAGE|base"
	"redis-kitchen|sandbox-test/redis-kitchen:7|REDIS_KITCHEN_IMAGE|redis"
	"mongo|sandbox-test/mongo:ferretdb|MONGO_IMAGE|base"
)

START=$SECONDS
log() { printf '[images %3ds] %s\n' "$((SECONDS - START))" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
trap 'rc=$?; [ "$rc" = 0 ] || log "FAILED (exit $rc) after $((SECONDS - START))s"' EXIT

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; }

FORCE=0 HASHES=0
case "${1:-}" in
	'') ;;
	--print)
		for spec in "${IMAGES[@]}"; do
			IFS='|' read -r _ suffix key _ <<<"$spec"
			echo "$key=$REG/$suffix"
		done
		exit 0 ;;
	--force) FORCE=1 ;;
	--hashes) HASHES=1 ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
esac

mkdir -p "$OUT/cache" "$OUT/logs" "$OUT/ctx"
# Note: make test, the demo and people run this concurrently; one at a time.
# Daemons started below (dockerd, the registry) must not inherit fd 9: they would
# hold the lock for as long as they run. Hence the `9>&-` on their command lines.
exec 9>"$OUT/.lock"
if ! flock -n 9; then
	log "another hack/images.sh is running; waiting for it (at most 30 minutes)"
	flock -w 1800 9 || die "$OUT/.lock is still held after 30 minutes; see \`fuser -v $OUT/.lock\`"
fi

sha() { sha256sum | cut -c1-64; }
# hash_files DIR...: a hash over the relative names, modes and contents of the files.
hash_files() {
	local d
	for d in "$@"; do
		(cd "$d" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum &&
			find . -type f -printf '%m %p\n' | LC_ALL=C sort)
	done | sha
}

# ---------------------------------------------------------------- prerequisites
ensure_docker() {
	if ! docker version >/dev/null 2>&1; then
		log "starting the Docker engine (hack/ensure-docker.sh)"
		"$ROOT/hack/ensure-docker.sh" 9>&-
	fi
}

apt_updated=0
apt_install() { # apt_install CMD PACKAGE...
	local cmd="$1"; shift
	command -v "$cmd" >/dev/null 2>&1 && return 0
	log "installing $* from Debian"
	if [ "$apt_updated" = 0 ]; then apt-get update -qq; apt_updated=1; fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# The Debian mirrors apt is configured with (deb822 .sources and one-line .list).
detect_mirrors() {
	local files=() f
	[ -f /etc/apt/sources.list ] && files+=(/etc/apt/sources.list)
	for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] && files+=("$f")
	done
	[ "${#files[@]}" -gt 0 ] || return 0
	awk -v suite="$DEBIAN_SUITE" '
		function emit(uri, suites,   n, i, s) {
			n = split(suites, s, /[ \t]+/)
			for (i = 1; i <= n; i++) {
				if (s[i] == suite && !main) main = uri
				if (s[i] == suite "-security" && !sec) sec = uri
			}
		}
		function flush() {
			if (types ~ /(^|[ \t])deb([ \t]|$)/ && uris != "") emit(uris, suites)
			types = ""; uris = ""; suites = ""
		}
		FNR == 1 { flush() }
		/^[ \t]*#/ { next }
		/^deb[ \t]/ { sub(/\[[^]]*\][ \t]*/, ""); emit($2, $3); next }
		/^Types:/ { types = $0 }
		/^URIs:/ { uris = $2 }
		/^Suites:/ { suites = $0; sub(/^Suites:[ \t]*/, "", suites) }
		/^[ \t]*$/ { flush() }
		END { flush(); print main; print sec }
	' "${files[@]}"
}

MIRROR="${SANDBOX_DEBIAN_MIRROR:-}"
SEC_MIRROR="${SANDBOX_DEBIAN_SECURITY_MIRROR:-}"
resolve_mirrors() {
	local found
	if [ -z "$MIRROR" ] || [ -z "$SEC_MIRROR" ]; then
		mapfile -t found < <(detect_mirrors)
		: "${MIRROR:=${found[0]:-}}"
		: "${SEC_MIRROR:=${found[1]:-}}"
	fi
	[ -n "$MIRROR" ] || die "no Debian mirror for $DEBIAN_SUITE in apt's sources; set SANDBOX_DEBIAN_MIRROR"
	[ -n "$SEC_MIRROR" ] || die "no $DEBIAN_SUITE-security mirror in apt's sources; set SANDBOX_DEBIAN_SECURITY_MIRROR"
	MIRROR="${MIRROR%/}"; SEC_MIRROR="${SEC_MIRROR%/}"
}

# ---------------------------------------------------------------- registry
REGISTRY_STARTED=0
registry_up() { curl -fsS -m 3 -o /dev/null "http://$REG/v2/"; }

ensure_registry() {
	registry_up && return 0
	local host="${REG%:*}" port="${REG##*:}" pidfile pid logf
	case "$host" in
		localhost|127.0.0.1) ;;
		*) die "registry $REG does not answer, and only a localhost registry is started here" ;;
	esac
	# Note: hack/demo-stop.sh reads bin/images/registry.pid.
	pidfile="$OUT/registry.pid" logf="$OUT/registry.log"
	if [ ! -x "$REGISTRY_BIN" ]; then
		log "building go-containerregistry's registry $REGISTRY_VERSION"
		GOBIN="$(dirname "$REGISTRY_BIN")" GOFLAGS= GOWORK=off CGO_ENABLED=0 \
			go install "github.com/google/go-containerregistry/cmd/registry@$REGISTRY_VERSION"
	fi
	# A registry of ours that runs but does not answer is replaced.
	if [ -f "$pidfile" ] && pid="$(cat "$pidfile")" && [ -n "$pid" ] \
		&& [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$REGISTRY_BIN" ]; then
		log "registry pid $pid does not answer; stopping it"
		kill "$pid" 2>/dev/null || true
		sleep 0.5
	fi
	log "starting registry on $REG (in memory; log $logf)"
	# Note: the registry must outlive this script (make images; then tests pull).
	setsid nohup "$REGISTRY_BIN" -port "$port" >>"$logf" 2>&1 </dev/null 9>&- &
	echo $! >"$pidfile"
	for _ in $(seq 1 50); do
		registry_up && { REGISTRY_STARTED=1; return 0; }
		sleep 0.2
	done
	tail -5 "$logf" >&2 || true
	die "registry on $REG did not answer within 10s"
}

# ---------------------------------------------------------------- base rootfs
BASE_HASH= BASE_REF=
MERGED_USR_HOOK=/usr/share/mmdebstrap/hooks/merged-usr
BASE_ARGS=() BASE_SOURCES=()
base_inputs() {
	local args
	args=(--variant=minbase --format=tar --aptopt='Acquire::Retries "3"')
	# Note: without this hook bookworm's minbase gets usrmerge, and with it 45 MB of perl.
	# It is always named, whether mmdebstrap is installed yet or not: the input hash
	# must not depend on the machine's state (ensure_base checks it exists).
	args+=("--hook-dir=$MERGED_USR_HOOK")
	while IFS= read -r line; do
		case "$line" in ''|'#'*) continue ;; esac
		args+=("--dpkgopt=$line")
	done <"$HERE/dpkg-excludes.conf"
	args+=("$DEBIAN_SUITE")
	local sources=(
		"deb $MIRROR $DEBIAN_SUITE main"
		"deb $MIRROR $DEBIAN_SUITE-updates main"
		"deb $SEC_MIRROR $DEBIAN_SUITE-security main"
	)
	BASE_HASH="$(printf '%s\n' "${args[@]}" "${sources[@]}" | sha)"
	BASE_REF="sandbox-test/debian:$DEBIAN_SUITE-${BASE_HASH:0:12}"
	BASE_ARGS=("${args[@]}") BASE_SOURCES=("${sources[@]}")
}

ensure_base() {
	local tar tmp
	if [ "$FORCE" = 0 ] && [ "$(image_hash "$BASE_REF")" = "$BASE_HASH" ]; then
		log "base $BASE_REF: up to date"
		return 0
	fi
	tar="$OUT/cache/rootfs-$DEBIAN_SUITE-${BASE_HASH:0:12}.tar"
	if [ ! -s "$tar" ] || [ "$FORCE" = 1 ]; then
		apt_install mmdebstrap mmdebstrap
		[ -d "$MERGED_USR_HOOK" ] || die "mmdebstrap has no $MERGED_USR_HOOK (Debian bookworm's mmdebstrap provides it)"
		log "mmdebstrap $DEBIAN_SUITE (minbase) from $MIRROR"
		local t0=$SECONDS
		tmp="$tar.tmp"
		rm -f "$tmp"
		if ! mmdebstrap "${BASE_ARGS[@]}" "$tmp" "${BASE_SOURCES[@]}" >"$OUT/logs/rootfs.log" 2>&1; then
			tail -20 "$OUT/logs/rootfs.log" >&2
			die "mmdebstrap failed; see $OUT/logs/rootfs.log"
		fi
		mv "$tmp" "$tar"
		# Only the current rootfs tarball is kept.
		find "$OUT/cache" -maxdepth 1 -name "rootfs-*.tar" ! -name "$(basename "$tar")" -delete
		log "rootfs built in $((SECONDS - t0))s ($(du -h "$tar" | cut -f1))"
	fi
	log "importing $BASE_REF"
	docker import -c 'CMD ["bash"]' -c "LABEL $TEST_LABEL" -c "LABEL $HASH_LABEL=$BASE_HASH" \
		"$tar" "$BASE_REF" >/dev/null
}

image_hash() { docker image inspect -f "{{index .Config.Labels \"$HASH_LABEL\"}}" "$1" 2>/dev/null || true; }

# ---------------------------------------------------------------- build inputs
# FerretDB, built from the Go module proxy. Its version package refuses to start
# without build/version/version.txt, which `go install` cannot provide.
ferretdb_bin() {
	local bin="$OUT/cache/ferretdb-$FERRETDB_VERSION/ferretdb" dir src
	if [ ! -x "$bin" ]; then
		log "building FerretDB $FERRETDB_VERSION (CGO off)"
		dir="$(GOFLAGS= GOWORK=off go mod download -json "github.com/FerretDB/FerretDB@$FERRETDB_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
		[ -d "$dir" ] || die "go mod download of FerretDB $FERRETDB_VERSION failed"
		src="$(mktemp -d)"
		cp -r "$dir/." "$src/"
		chmod -R u+w "$src"
		echo "$FERRETDB_VERSION" >"$src/build/version/version.txt"
		echo "sandbox-test" >"$src/build/version/package.txt"
		mkdir -p "$(dirname "$bin")"
		(cd "$src" && CGO_ENABLED=0 GOFLAGS= GOWORK=off go build -trimpath -buildvcs=false \
			-ldflags='-s -w' -o "$bin.tmp" ./cmd/ferretdb) || { rm -rf "$src"; die "building FerretDB failed"; }
		rm -rf "$src"
		mv "$bin.tmp" "$bin"
	fi
	echo "$bin"
}

# mongosh's node_modules, installed from the committed lockfile with `npm ci`.
mongosh_modules() {
	local h dir tmp
	h="$(hash_files "$HERE/mongo/mongosh")"
	dir="$OUT/cache/mongosh-${h:0:12}"
	if [ ! -d "$dir/node_modules" ]; then
		apt_install npm npm
		log "npm ci mongosh ($(sed -n 's/.*"mongosh": "\(.*\)".*/\1/p' "$HERE/mongo/mongosh/package.json"))"
		tmp="$(mktemp -d "$dir.tmp.XXXXXX")"
		cp "$HERE/mongo/mongosh/package.json" "$HERE/mongo/mongosh/package-lock.json" "$tmp/"
		# Note: optional dependencies are native helpers (kerberos, CSFLE, OS CA store)
		# that download prebuilt binaries; the shell does not need them.
		(cd "$tmp" && npm ci --omit=optional --omit=dev --ignore-scripts --no-audit --no-fund \
			--loglevel=error >"$OUT/logs/mongosh-npm.log" 2>&1) || { tail -20 "$OUT/logs/mongosh-npm.log" >&2; rm -rf "$tmp"; die "npm ci failed"; }
		find "$tmp/node_modules" -type f \( -name '*.map' -o -name '*.markdown' \) -delete
		[ -f "$tmp/node_modules/.bin/mongosh" ] || die "npm ci left no mongosh"
		mv "$tmp" "$dir"
		find "$OUT/cache" -maxdepth 1 -name 'mongosh-*' -type d ! -name "$(basename "$dir")" -exec rm -rf {} +
	fi
	echo "$dir/node_modules"
}

# ---------------------------------------------------------------- images
declare -A HASH REF
# prepare_context NAME: prints the docker build context directory.
prepare_context() {
	local name="$1" ctx="$OUT/ctx/$1" ferretdb modules
	rm -rf "$ctx"
	mkdir -p "$ctx"
	cp -a "$HERE/$name/." "$ctx/"
	case "$name" in
		mongo)
			ferretdb="$(ferretdb_bin)"
			modules="$(mongosh_modules)"
			cp "$ferretdb" "$ctx/ferretdb"
			cp -al "$modules" "$ctx/mongosh/node_modules"
			;;
	esac
	echo "$ctx"
}

# Pinned versions each image is built from, besides its folder and its parent.
declare -A PINS=([postgres-kitchen]="PGVECTOR_SOURCE_VERSION PGVECTOR_SOURCE_SUITE" [mongo]="FERRETDB_VERSION")
input_hash() { # input_hash NAME PARENT_HASH
	local k
	{
		echo "parent=$2"
		for k in ${PINS[$1]:-}; do echo "$k=${!k}"; done
		echo "mirror=$MIRROR $SEC_MIRROR"
		hash_files "$HERE/$1"
	} | sha
}

BUILT=() PUSHED=() SKIPPED=()
ensure_image() { # ensure_image NAME SUFFIX PARENT
	local name="$1" suffix="$2" parent="$3" parent_ref parent_hash ref hash ctx t0
	if [ "$parent" = base ]; then parent_ref="$BASE_REF"; parent_hash="$BASE_HASH"
	else parent_ref="${REF[$parent]}"; parent_hash="${HASH[$parent]}"; fi
	ref="$REG/$suffix"
	hash="$(input_hash "$name" "$parent_hash")"
	REF[$name]="$ref"; HASH[$name]="$hash"
	if [ "$FORCE" = 0 ] && [ "$(image_hash "$ref")" != "$hash" ] && registry_has "$ref"; then
		# Note: tests remove local images to exercise pulls; the registry may still
		# serve this very build, which is much cheaper to pull than to rebuild.
		docker pull -q "$ref" >/dev/null 2>&1 || true
		[ "$(image_hash "$ref")" != "$hash" ] || log "$ref: pulled back from $REG"
	fi
	if [ "$FORCE" = 0 ] && [ "$(image_hash "$ref")" = "$hash" ]; then
		SKIPPED+=("$name")
	else
		t0=$SECONDS
		log "building $ref"
		ctx="$(prepare_context "$name")"
		if ! docker build --pull=false --force-rm \
			--build-arg "BASE_IMAGE=$parent_ref" \
			--build-arg "ROOTFS_IMAGE=$BASE_REF" \
			--build-arg "DEBIAN_MIRROR=$MIRROR" \
			--build-arg "PGVECTOR_SOURCE_VERSION=$PGVECTOR_SOURCE_VERSION" \
			--build-arg "PGVECTOR_SOURCE_SUITE=$PGVECTOR_SOURCE_SUITE" \
			--label "$TEST_LABEL" --label "$HASH_LABEL=$hash" \
			-t "$ref" "$ctx" >"$OUT/logs/$name.log" 2>&1; then
			tail -30 "$OUT/logs/$name.log" >&2
			die "docker build of $ref failed; see $OUT/logs/$name.log"
		fi
		rm -rf "$ctx"
		BUILT+=("$name")
		log "built $ref in $((SECONDS - t0))s ($(image_size "$ref"))"
	fi
}

image_size() { docker image inspect -f '{{.Size}}' "$1" | awk '{printf "%d MB", $1/1000/1000}'; }

registry_digest() { # registry_digest REF: the digest the registry serves for REF, or nothing
	local ref="$1" repo tag
	repo="${ref#"$REG"/}"; tag="${repo##*:}"; repo="${repo%:*}"
	curl -fsS -m 10 -I \
		-H 'Accept: application/vnd.docker.distribution.manifest.v2+json' \
		-H 'Accept: application/vnd.oci.image.manifest.v1+json' \
		"http://$REG/v2/$repo/manifests/$tag" 2>/dev/null \
		| tr -d '\r' | sed -n 's/^[Dd]ocker-[Cc]ontent-[Dd]igest: //p' || true
}
registry_has() { [ -n "$(registry_digest "$1")" ]; }

# needs_push REF: true unless the registry already serves this image's digest.
needs_push() {
	local ref="$1" repo remote
	repo="${ref#"$REG"/}"; repo="${repo%:*}"
	remote="$(registry_digest "$ref")"
	[ -z "$remote" ] && return 0
	! docker image inspect -f '{{range .RepoDigests}}{{println .}}{{end}}' "$ref" | grep -qxF "$REG/$repo@$remote"
}

push_with_retries() { # push_with_retries REF LOG
	local try
	for try in 1 2 3; do
		docker push "$1" >"$2" 2>&1 && return 0
		sleep "$try"
	done
	return 1
}

# push_all REF...: pushes the images the registry does not serve yet.
# Note: after a registry restart every layer is compressed and sent again (the
# registry binary keeps everything in memory; it has no disk storage flag).
# One after another: parents first, so a kitchen image finds its parent's layers;
# parallel pushes were slower on 2 cores.
push_all() {
	local ref logf n=0 t0=$SECONDS
	for ref in "$@"; do
		needs_push "$ref" || continue
		[ "$n" -gt 0 ] || log "pushing to $REG"
		logf="$OUT/logs/push-$(tr '/:' '__' <<<"${ref#"$REG"/}").log"
		if ! push_with_retries "$ref" "$logf"; then
			tail -5 "$logf" >&2
			die "docker push $ref failed; see $logf"
		fi
		PUSHED+=("$ref"); n=$((n + 1))
	done
	[ "$n" = 0 ] || log "pushed $n image(s) in $((SECONDS - t0))s"
}

# ---------------------------------------------------------------- main
if [ "$HASHES" = 1 ]; then
	resolve_mirrors
	base_inputs
	declare -A H=([base]="$BASE_HASH")
	echo "base=$BASE_HASH"
	for spec in "${IMAGES[@]}"; do
		IFS='|' read -r name _ _ parent <<<"$spec"
		H[$name]="$(input_hash "$name" "${H[$parent]}")"
		echo "$name=${H[$name]}"
	done
	exit 0
fi
command -v curl >/dev/null 2>&1 || apt_install curl curl
ensure_docker
resolve_mirrors
ensure_registry
base_inputs
# Note: on a fresh machine compiling FerretDB is the longest step (~3 min on 2
# busy cores); it runs alongside the rootfs and the other images when needed.
PREFETCH_PID=
if [ "$FORCE" = 1 ] || [ "$(image_hash "$REG/sandbox-test/mongo:ferretdb")" != "$(input_hash mongo "$BASE_HASH")" ]; then
	( ferretdb_bin >/dev/null; mongosh_modules >/dev/null ) &
	PREFETCH_PID=$!
fi
ensure_base
for spec in "${IMAGES[@]}"; do
	if [ "${spec%%|*}" = mongo ] && [ -n "$PREFETCH_PID" ]; then
		wait "$PREFETCH_PID" || die "preparing FerretDB / mongosh failed"
	fi
	IFS='|' read -r name suffix _ parent <<<"$spec"
	ensure_image "$name" "$suffix" "$parent"
done
ORDERED=()
for spec in "${IMAGES[@]}"; do IFS='|' read -r name _ <<<"$spec"; ORDERED+=("${REF[$name]}"); done
push_all "${ORDERED[@]}"
if [ "${#BUILT[@]}" -gt 0 ]; then
	# Note: only dangling images that carry our label (earlier builds of ours).
	# Build stages (labelled sandbox.roboco.io/build-stage) stay as build cache.
	docker image prune -f --filter "label=$TEST_LABEL" --filter 'label!=sandbox.roboco.io/build-stage' >/dev/null || true
fi

log "registry $REG$([ "$REGISTRY_STARTED" = 1 ] && echo ' (started)')"
log "built: ${BUILT[*]:-none}; up to date: ${SKIPPED[*]:-none}; pushed: ${#PUSHED[@]}"
for spec in "${IMAGES[@]}"; do
	IFS='|' read -r name suffix key _ <<<"$spec"
	log "  $key=$REG/$suffix ($(image_size "$REG/$suffix"))"
done
log "done in $((SECONDS - START))s"
