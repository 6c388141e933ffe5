#!/usr/bin/env bash
# Builds the local control plane (kube-apiserver, kube-controller-manager, kubectl,
# etcd) from the Go module proxy into bin/k8s/<k8s>-etcd<etcd>-<os>-<arch>/, and
# does nothing when that folder is already complete. Prints the folder on stdout.
# Note: no download site is reachable on our machines, so setup-envtest cannot work;
# the versions are pinned by the tools modules under hack/tools/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kube_version=$(awk '$1=="require" && $2=="k8s.io/kubernetes" {print $3}' "$root/hack/tools/kube/go.mod")
etcd_version=$(awk '$1=="require" && $2=="go.etcd.io/etcd/server/v3" {print $3}' "$root/hack/tools/etcd/go.mod")
out="$root/bin/k8s/${kube_version#v}-etcd${etcd_version#v}-$(go env GOOS)-$(go env GOARCH)"
mkdir -p "$out"

build() { # dir, then "package binary" pairs: the missing ones are built by one go build
  local dir=$1 pkgs=() bins=()
  shift
  while [ $# -gt 0 ]; do
    if [ ! -x "$out/$2" ]; then pkgs+=("$1"); bins+=("$2"); fi
    shift 2
  done
  if [ ${#pkgs[@]} -eq 0 ]; then return 0; fi
  echo "building ${bins[*]} (this takes minutes on a cold cache)" >&2
  # Note: one go build for several commands compiles their shared packages once
  # (kube-apiserver and kube-controller-manager share most of theirs).
  local tmp="$out/.tmp-$dir"
  rm -rf "$tmp" && mkdir -p "$tmp"
  if [ ${#pkgs[@]} -eq 1 ]; then
    # Note: one package is named by -o (etcd's main package path ends in /v3).
    (cd "$root/hack/tools/$dir" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$tmp/${bins[0]}" "${pkgs[0]}")
  else
    (cd "$root/hack/tools/$dir" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$tmp/" "${pkgs[@]}")
  fi
  for b in "${bins[@]}"; do mv "$tmp/$b" "$out/$b"; done
  rmdir "$tmp"
}

build etcd go.etcd.io/etcd/server/v3 etcd &
etcd_pid=$!
build kube k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager kube-controller-manager \
  k8s.io/kubernetes/cmd/kubectl kubectl
wait "$etcd_pid"
echo "$out"
