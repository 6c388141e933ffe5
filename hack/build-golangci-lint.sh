#!/usr/bin/env bash
# Builds golangci-lint, pinned by the tools module hack/tools/golangci-lint, into
# bin/golangci-lint/<key>/ and does nothing when that binary exists. Prints the
# binary's path on stdout.
# Note: the key hashes the tools module's go.mod and go.sum (what pins the build)
# and the Go version that builds it (golangci-lint refuses code newer than its Go),
# nothing the build writes, so a second run finds the first run's binary.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tools="$root/hack/tools/golangci-lint"
version=$(awk '$1=="github.com/golangci/golangci-lint/v2" {print $2}' "$tools/go.mod")
key=$( { cat "$tools/go.mod" "$tools/go.sum"; go env GOVERSION GOOS GOARCH; } | sha256sum | cut -c1-16)
out="$root/bin/golangci-lint/${version}-${key}"
if [ ! -x "$out/golangci-lint" ]; then
  echo "building golangci-lint $version (a few minutes on a cold cache)" >&2
  mkdir -p "$out"
  tmp="$out/golangci-lint.tmp.$$"
  # -mod=readonly: the build must not rewrite the go.mod/go.sum the key hashes.
  (cd "$tools" && CGO_ENABLED=0 go build -mod=readonly -trimpath -o "$tmp" github.com/golangci/golangci-lint/v2/cmd/golangci-lint)
  mv "$tmp" "$out/golangci-lint"
fi
echo "$out/golangci-lint"
