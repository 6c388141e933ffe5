# sandbox-controller — targets in the kubebuilder tradition.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -o pipefail -ec

CONTROLLER_GEN ?= go tool controller-gen
GO_TEST_FLAGS ?= -timeout 45m

.PHONY: all
all: test

##@ General

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  %-18s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: ## Generate the CRD under config/crd/bases from the API markers.
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases

.PHONY: generate
generate: ## Generate the deepcopy methods of the API types.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...

.PHONY: fmt
fmt: ## Run gofmt on the code.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: verify-generated
verify-generated: ## Fail when generated files or formatting are stale.
	hack/verify-generated.sh

##@ Test

.PHONY: envtest
envtest: ## Build kube-apiserver, etcd and kubectl from source into bin/k8s/<version> (skipped when present).
	hack/build-envtest.sh

.PHONY: docker
docker: ## Make sure a Docker engine answers (installs and starts dockerd when needed).
	hack/ensure-docker.sh

.PHONY: test
test: verify-generated vet docker ## Run every test suite (builds what it needs first).
	KUBEBUILDER_ASSETS="$$(hack/build-envtest.sh)" go test $(GO_TEST_FLAGS) ./...
