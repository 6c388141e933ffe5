#!/usr/bin/env bash
# Shows that the controller specs can fail: each bug planted into a
# chaos_plant build (internal/chaosplant) must make its spec fail, naming what
# it broke. A planted run that passes fails this script.
set -uo pipefail
cd "$(dirname "$0")/.."
: "${KUBEBUILDER_ASSETS:=$(hack/build-envtest.sh)}"
export KUBEBUILDER_ASSETS

# bug | package | spec focus | what the failure must say
cases=(
	"step-awaited|./controllers/sandbox/|goes Ready once the seed ends|a pass waited on a container step"
	"shrink-at-once|./controllers/sandbox/|counts a dropped service at its memory|another Sandbox was admitted into room a dropped service still takes"
	"creates-uncounted|./controllers/sandboxpool/|counts creates in flight against|members were made beyond the quota's 2 beside the create in flight"
)
status=0
for c in "${cases[@]}"; do
	IFS='|' read -r bug pkg focus want <<<"$c"
	out=$(SANDBOX_CHAOS_PLANT="$bug" go test -tags chaos_plant -count=1 "$pkg" -ginkgo.focus="$focus" 2>&1)
	rc=$?
	if [ "$rc" -ne 0 ] && grep -qF "$want" <<<"$out"; then
		echo "planted $bug: caught ($want)"
	else
		echo "planted $bug: NOT caught (exit $rc; want a failure saying: $want)" >&2
		tail -n 40 <<<"$out" >&2
		status=1
	fi
done
exit "$status"
