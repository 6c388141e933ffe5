#!/usr/bin/env bash
# Generates the API module's typed clients into api/client/: apply configurations,
# a clientset (with server-side Apply), listers and informers, from the +genclient
# types in api/v1alpha1. The generators are k8s.io/code-generator, pinned as tools
# of the main module; they run inside api/ so that they read the API module itself.
# `make generate` runs this; hack/verify-generated.sh fails when the output is stale.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
tool() { go tool -n "$1"; }
client_gen=$(tool client-gen) lister_gen=$(tool lister-gen) informer_gen=$(tool informer-gen) apply_gen=$(tool applyconfiguration-gen)
module=github.com/roboco-sandbox/sandbox-controller/api
input=$module/v1alpha1
header=$root/hack/boilerplate.go.txt
cd api
rm -rf client
"$apply_gen" --go-header-file "$header" --output-dir client/applyconfiguration --output-pkg $module/client/applyconfiguration "$input"
"$client_gen" --go-header-file "$header" --clientset-name versioned --input-base "" --input "$input" \
  --apply-configuration-package $module/client/applyconfiguration \
  --output-dir client/clientset --output-pkg $module/client/clientset
"$lister_gen" --go-header-file "$header" --output-dir client/listers --output-pkg $module/client/listers "$input"
"$informer_gen" --go-header-file "$header" --versioned-clientset-package $module/client/clientset/versioned \
  --listers-package $module/client/listers --output-dir client/informers --output-pkg $module/client/informers "$input"
