#!/usr/bin/env bash
# Usage: hack/build-tool.sh <tools dir> <module> <package>
# Builds a Go tool pinned by its own tools module hack/tools/<tools dir> into
# bin/<tools dir>/<version>-<key>/ and does nothing when that binary exists.
# Prints the binary's path on stdout. golangci-lint and promtool come this way.
# Note: the key hashes the tools module's go.mod and go.sum (what pins the build)
# and the Go version that builds it (golangci-lint refuses code newer than its Go),
# nothing the build writes, so a second run finds the first run's binary.
set -euo pipefail
name=$1 module=$2 pkg=$3
root=$(cd "$(dirname "$0")/.." && pwd)
tools="$root/hack/tools/$name"
version=$(awk -v m="$module" '$1==m {print $2}' "$tools/go.mod")
key=$( { cat "$tools/go.mod" "$tools/go.sum"; go env GOVERSION GOOS GOARCH; } | sha256sum | cut -c1-16)
bin=$(basename "$pkg")
out="$root/bin/$name/${version}-${key}"
if [ ! -x "$out/$bin" ]; then
  echo "building $bin $version (a few minutes on a cold cache)" >&2
  mkdir -p "$out"
  tmp="$out/$bin.tmp.$$"
  # -mod=readonly: the build must not rewrite the go.mod/go.sum the key hashes.
  (cd "$tools" && CGO_ENABLED=0 go build -mod=readonly -trimpath -o "$tmp" "$pkg")
  mv "$tmp" "$out/$bin"
fi
echo "$out/$bin"
