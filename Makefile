# sandbox-controller — targets in the kubebuilder tradition.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -o pipefail -ec

# controller-gen is a tool of the main module; the API is its own module (api/),
# so it runs there by path (`go tool -n` builds it into Go's cache and names it).
CONTROLLER_GEN ?= $(shell go tool -n controller-gen)
# Note: -count=1 because the suites depend on Docker and the control plane, which
# Go's test cache cannot see.
GO_TEST_FLAGS ?= -count=1 -timeout 45m

.PHONY: all
all: test

##@ General

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  %-18s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

# The manager image; `make docker-build deploy IMG=registry.example/sandbox-controller:v1`.
IMG ?= sandbox-controller:dev
# The Helm chart: what `make deploy` installs, for helm (make manifests refreshes its copies).
CHART := config/helm/sandbox-controller
# The kubectl `make envtest` builds (no download site is reachable); override with KUBECTL=kubectl.
KUBECTL ?= "$$(hack/build-envtest.sh)/kubectl"

.PHONY: manifests
manifests: ## Generate the CRD (config/crd/bases) and the manager's ClusterRole (config/rbac/role.yaml) from the markers, and the Helm chart's copies of them.
	cd api && $(CONTROLLER_GEN) crd paths=./... output:crd:artifacts:config=../config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=manager-role paths=./controllers/... output:rbac:artifacts:config=config/rbac
	@# The Helm chart carries copies: Helm reads no file outside its directory.
	cp config/crd/bases/*.yaml $(CHART)/crds/
	cp config/rbac/role.yaml $(CHART)/files/manager-role.yaml
	cp config/prometheus/alerts.yaml $(CHART)/files/alerts.yaml

.PHONY: generate
generate: ## Generate the deepcopy methods of the API types and the API module's typed clients (api/client).
	cd api && $(CONTROLLER_GEN) object:headerFile=../hack/boilerplate.go.txt paths=./...
	hack/update-codegen.sh

.PHONY: fmt
fmt: ## Run gofmt on the code.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet on both modules (the controller and api/).
	go vet ./...
	cd api && go vet ./...

.PHONY: verify-generated
verify-generated: ## Fail when generated files or formatting are stale.
	hack/verify-generated.sh

.PHONY: verify-tidy
verify-tidy: ## Fail when go.mod/go.sum (main module, api/, hack/tools/*, hack/tcbench) are not tidy.
	hack/verify-tidy.sh

# golangci-lint, built from hack/tools/golangci-lint into bin/ on first use; override with GOLANGCI_LINT=golangci-lint.
GOLANGCI_LINT ?= "$$(hack/build-tool.sh golangci-lint github.com/golangci/golangci-lint/v2 github.com/golangci/golangci-lint/v2/cmd/golangci-lint)"

.PHONY: lint
lint: ## Run golangci-lint (.golangci.yml) on every package of both modules.
	lint=$(GOLANGCI_LINT) && $$lint run --allow-parallel-runners ./... && \
		cd api && $$lint run --allow-parallel-runners --config ../.golangci.yml ./...

##@ Test

.PHONY: envtest
envtest: ## Build kube-apiserver, etcd and kubectl from source into bin/k8s/<version> (skipped when present).
	hack/build-envtest.sh

.PHONY: docker
docker: ## Make sure a Docker engine answers (installs and starts dockerd when needed).
	hack/ensure-docker.sh

.PHONY: images
images: docker ## Build the engine images (postgres, redis, mongo stand-in) and serve them from the local registry.
	hack/images.sh

# The chaos suite's short run inside `make test`, and its long run (`make chaos`).
CHAOS_SHORT_CYCLES ?= 10
CHAOS_CYCLES ?= 130
# The tenant-input chaos (TestChaosTenant): random tenant actions under a quota.
CHAOS_SHORT_TENANT_ACTIONS ?= 20
CHAOS_TENANT_ACTIONS ?= 200
CHAOS_OUTAGE ?= 4m

.PHONY: test
test: verify-generated verify-tidy vet lint images ## Run every test suite (builds what it needs first), the chaos suite's short run among them.
	hack/ensure-iproute2.sh
	@# promtool (test/prometheus) and helm (test/helm) are built here, before the suites run in parallel.
	hack/build-tool.sh promtool github.com/prometheus/prometheus github.com/prometheus/prometheus/cmd/promtool >/dev/null
	hack/build-tool.sh helm helm.sh/helm/v4 helm.sh/helm/v4/cmd/helm >/dev/null
	cd api && go test $(GO_TEST_FLAGS) ./...
	CHAOS_CYCLES=$(CHAOS_SHORT_CYCLES) CHAOS_TENANT_ACTIONS=$(CHAOS_SHORT_TENANT_ACTIONS) KUBEBUILDER_ASSETS="$$(hack/build-envtest.sh)" go test $(GO_TEST_FLAGS) ./...
	hack/planted.sh

.PHONY: test-planted
test-planted: ## Show the controller specs can fail: each bug planted in a chaos_plant build (hack/planted.sh) must fail its spec, naming what it broke.
	hack/planted.sh

# The controller suites alone, the inner loop before `make test`: each reconciler
# package (controllers/sandbox, sandboxpool, sweep) and the face (controllers/) runs
# its own suite on its own control plane, side by side. PKG=<name> runs one
# package's (PKG=sandboxpool; PKG=. the face's); FOCUS='words' runs the specs whose
# text matches.
PKG ?=
FOCUS ?=

.PHONY: test-controllers
test-controllers: images ## Run the controller suites (PKG=sandboxpool: one package's; PKG=.: the face's; FOCUS='words' with PKG: its matching specs only).
	KUBEBUILDER_ASSETS="$$(hack/build-envtest.sh)" go test $(GO_TEST_FLAGS) $(if $(PKG),./controllers/$(PKG)/,./controllers/...) $(if $(FOCUS),-ginkgo.focus='$(FOCUS)')

.PHONY: chaos
chaos: images ## The long chaos run (CHAOS_CYCLES=130 fault cycles: each of the 13 kinds at least 10 times; CHAOS_SEED=n replays one), CHAOS_TENANT_ACTIONS=200 random tenant actions under a quota, the planted bugs it must catch, and idle Sandboxes through a CHAOS_OUTAGE=4m daemon outage.
	hack/ensure-iproute2.sh
	CHAOS_CYCLES=$(CHAOS_CYCLES) CHAOS_TENANT_ACTIONS=$(CHAOS_TENANT_ACTIONS) CHAOS_OUTAGE=$(CHAOS_OUTAGE) CHAOS_PLANTED=1 KUBEBUILDER_ASSETS="$$(hack/build-envtest.sh)" go test -count=1 -timeout 600m -v -run 'TestChaos' ./test/chaos/

.PHONY: chaos-planted
chaos-planted: images ## Show that the chaos suite catches each planted bug (a manager built with -tags chaos_plant).
	hack/ensure-iproute2.sh
	CHAOS_PLANTED=1 KUBEBUILDER_ASSETS="$$(hack/build-envtest.sh)" go test -count=1 -timeout 60m -v -run 'TestChaosPlanted' ./test/chaos/

.PHONY: bench
bench: images ## Measure create→Ready per engine, the trio and each sample (medians of 5, ratios), a cold postgres+redis Sandbox against testcontainers-go on the same images (hack/tcbench, 10 interleaved rounds), idle Docker calls, the manager's idle CPU and memory with 50 Sandboxes, its heap before and after a tenant's 300 ConfigMaps with 190 KiB annotations and 40 labelled Secrets applied with kubectl apply, and warm pools: claims against cold on two clocks (p50/p99 of 30 interleaved), mongo claims against cold, a claim's steps, a burst of 50 against pools of 50 and its refill, and full idle pools' cost; reset and restore per engine beside a new Sandbox (spec.data), named checkpoints (checkpoint, restore and delete of one of four names, postgres and redis), with the passes' p99, and against the release before issue 39 in the same run; a cold Sandbox and a claim while 4 seeds of 5 minutes run and 28 wait for a lane, against none in the same run, with the passes' p99 and the time to delete the 32 mid-seed; then the fleet's scale benchmark (bench-scale).
	SANDBOX_BENCH=1 KUBEBUILDER_ASSETS="$$(hack/build-envtest.sh)" go test -p 1 -count=1 -timeout 90m -run TestBench -v ./internal/host/step/ ./test/integration/ ./test/e2e/ | grep -E '^(=== RUN|--- |\s+\S+_test.go|ok|FAIL)'
	$(MAKE) bench-scale

# The scale benchmark's last step (SCALE_SANDBOXES=1000 for a quick run), its hosts and its runs' replica counts.
SCALE_SANDBOXES ?= 5000
SCALE_HOSTS ?= 50
SCALE_MANAGERS ?= 1,3

.PHONY: bench-scale
bench-scale: ## The fleet at scale: SCALE_SANDBOXES (5000; steps 1,000, 2,000, 5,000) redis Sandboxes over SCALE_HOSTS (50) fake Docker hosts, by 1 and by 3 managers: time to Ready, memory per 1,000, API and Docker requests at rest, restart convergence, no duplicate create; then bench-scale-quota.
	SANDBOX_BENCH=1 SCALE_SANDBOXES=$(SCALE_SANDBOXES) SCALE_HOSTS=$(SCALE_HOSTS) SCALE_MANAGERS=$(SCALE_MANAGERS) KUBEBUILDER_ASSETS="$$(hack/build-envtest.sh)" go test -count=1 -timeout 180m -run 'TestBenchScale$$' -v ./test/scale/ | grep -E '^(=== RUN|--- |\s+\S+_test.go|ok|FAIL)'
	$(MAKE) bench-scale-quota

.PHONY: bench-scale-quota
bench-scale-quota: ## 1,000 redis Sandboxes at once under a SandboxQuota of 600 on fake hosts: over-admission (must be 0), admissions per second, waiting ones admitted as others go, the quota's size with 10 and 1,000 admitted.
	SANDBOX_BENCH=1 KUBEBUILDER_ASSETS="$$(hack/build-envtest.sh)" go test -count=1 -timeout 60m -run TestBenchScaleQuota -v ./test/scale/ | grep -E '^(=== RUN|--- |\s+\S+_test.go|ok|FAIL)'

##@ Build

.PHONY: build
build: ## Build the manager binary into bin/manager.
	CGO_ENABLED=0 go build -trimpath -o bin/manager ./cmd/manager

.PHONY: run
run: ## Run the manager against the current kubeconfig (ARGS="--flag=value ..."; the CRD must be installed: make install).
	go run ./cmd/manager $(ARGS)

.PHONY: docker-build
docker-build: ## Build the manager image IMG (default sandbox-controller:dev): a static binary on scratch, no base image pulled.
	CGO_ENABLED=0 GOOS=linux GOARCH="$$(docker version -f '{{.Server.Arch}}')" go build -trimpath -ldflags='-s -w' -o bin/docker/manager ./cmd/manager
	docker build -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the manager image IMG to its registry.
	docker push $(IMG)

##@ Deployment

.PHONY: build-installer
build-installer: manifests ## Write dist/install.yaml: everything deploy installs (CRDs, RBAC, the manager with image IMG) in one file, for kubectl apply -f.
	hack/deploy-overlay.sh '$(IMG)' bin/installer
	mkdir -p dist
	$(KUBECTL) kustomize bin/installer > dist/install.yaml

.PHONY: install
install: ## Install the CRD into the cluster of the current kubeconfig.
	$(KUBECTL) apply --server-side -k config/crd

.PHONY: uninstall
uninstall: ## Remove the CRD (and with it every Sandbox) from the cluster.
	$(KUBECTL) delete --ignore-not-found -k config/crd

.PHONY: deploy
deploy: ## Deploy CRD, RBAC and the manager (image IMG) with kustomize (config/default).
	hack/deploy-overlay.sh '$(IMG)' bin/deploy
	$(KUBECTL) apply --server-side -k bin/deploy

.PHONY: undeploy
undeploy: ## Delete what deploy created (delete your Sandboxes first, while the manager can still tear them down).
	$(KUBECTL) delete --ignore-not-found -k config/default

##@ Demo

.PHONY: demo
demo: ## Run everything locally: control plane, manager, a Sandbox with working credentials (leaves it running).
	hack/demo.sh

.PHONY: demo-stop
demo-stop: ## Stop the demo and remove everything it created (and nothing else).
	hack/demo-stop.sh
