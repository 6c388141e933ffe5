#!/usr/bin/env bash
# Fails when generated files (deepcopy, the typed clients in api/client, CRD and RBAC
# manifests) or Go formatting are stale: it regenerates them and compares. On a
# developer machine the tree is left regenerated, so committing is all that remains
# to do.
set -euo pipefail
cd "$(dirname "$0")/.."
generated() { find api config -type f \( -name 'zz_generated*.go' -o -name '*.yaml' -o -path 'api/client/*' \) -print0 | sort -z | xargs -0 sha256sum; }
before=$(generated)
make --no-print-directory generate manifests >/dev/null
after=$(generated)
if [ "$before" != "$after" ]; then
  echo "generated files were stale (now regenerated; review and commit them):" >&2
  diff <(echo "$before") <(echo "$after") >&2 || true
  exit 1
fi
unformatted=$(gofmt -l $(git ls-files '*.go') 2>/dev/null || true)
if [ -n "$unformatted" ]; then
  echo "gofmt would change these files (run make fmt):" >&2
  echo "$unformatted" >&2
  exit 1
fi
