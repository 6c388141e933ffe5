#!/usr/bin/env bash
# Fails when go.mod/go.sum of the main module, of the API module (api/), of a tools
# module under hack/tools/ or of hack/tcbench (the benchmark's testcontainers-go
# program) are not what `go mod tidy` makes of them. Changes nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
failed=()
for mod in go.mod api/go.mod hack/tools/*/go.mod hack/tcbench/go.mod; do
  dir=$(dirname "$mod")
  if ! out=$(cd "$dir" && go mod tidy -diff 2>&1); then
    out=$(grep -v '^go: downloading' <<<"$out" || true)
    if grep -q '^diff ' <<<"$out"; then
      echo "$dir: go.mod/go.sum are not tidy; go mod tidy would change them so:" >&2
    else
      echo "$dir: go mod tidy -diff failed:" >&2
    fi
    echo "$out" >&2
    failed+=("$dir")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo >&2
  echo "fix with:" >&2
  for dir in "${failed[@]}"; do
    if [ "$dir" = . ]; then echo "  go mod tidy" >&2; else echo "  (cd $dir && go mod tidy)" >&2; fi
  done
  exit 1
fi
