#!/usr/bin/env bash
# Builds the envtest control plane (kube-apiserver, kubectl, etcd) from the Go module
# proxy into bin/k8s/<k8s>-etcd<etcd>-<os>-<arch>/, and does nothing when that folder
# is already complete. Prints the folder on stdout.
# Note: no download site is reachable on our machines, so setup-envtest cannot work;
# the versions are pinned by the tools modules under hack/tools/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kube_version=$(awk '$1=="require" && $2=="k8s.io/kubernetes" {print $3}' "$root/hack/tools/kube/go.mod")
etcd_version=$(awk '$1=="require" && $2=="go.etcd.io/etcd/server/v3" {print $3}' "$root/hack/tools/etcd/go.mod")
out="$root/bin/k8s/${kube_version#v}-etcd${etcd_version#v}-$(go env GOOS)-$(go env GOARCH)"
mkdir -p "$out"

build() { # dir, package, binary name
  if [ -x "$out/$3" ]; then return 0; fi
  echo "building $3 from $2 (this takes minutes on a cold cache)" >&2
  (cd "$root/hack/tools/$1" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$out/$3.tmp" "$2")
  mv "$out/$3.tmp" "$out/$3"
}

build etcd go.etcd.io/etcd/server/v3 etcd &
etcd_pid=$!
build kube k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver
build kube k8s.io/kubernetes/cmd/kubectl kubectl
wait "$etcd_pid"
echo "$out"
