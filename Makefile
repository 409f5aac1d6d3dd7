# kubectl-podsync. `make help` lists the targets.
GO      ?= go
MODULE  := github.com/kubectl-podsync/kubectl-podsync
# The version comes from git: the nearest tag, else v0.0.0-dev.
VERSION ?= $(shell git describe --tags --match 'v*' --dirty 2>/dev/null || echo v0.0.0-dev)
LDFLAGS := -s -w -X $(MODULE)/pkg/version.Version=$(VERSION)
# Whole-suite budget: the end-to-end tests run a real control plane.
TEST_TIMEOUT ?= 40m

.PHONY: help build tools test unit e2e vet demo cluster-up cluster-down dist clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

build: ## Build bin/kubectl-podsync
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/kubectl-podsync ./cmd/kubectl-podsync

tools: ## Build the pinned control plane (etcd, kube-*, kubectl, kwok) into the cache
	hack/build-tools.sh

vet: ## gofmt, go vet and go.mod tidiness
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo 'gofmt needed'; exit 1; }
	$(GO) vet ./...
	$(GO) mod tidy -diff

test: vet ## Every test: unit and end-to-end against a local control plane, with -race
	PODSYNC_TOOLS_BIN="$$(hack/build-tools.sh)" $(GO) test -race -count=1 -p 1 -timeout $(TEST_TIMEOUT) ./...

unit: ## Unit tests only (no control plane)
	$(GO) test -race -count=1 $$($(GO) list ./... | grep -v -e /test/ -e /internal/localcluster)

e2e: ## End-to-end tests only
	PODSYNC_TOOLS_BIN="$$(hack/build-tools.sh)" $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -v ./test/e2e/

demo: ## Build everything, start a local cluster in .cluster/ and show kubectl podsync on it
	hack/demo.sh

cluster-up: ## Start (only) the local cluster in .cluster/
	$(GO) run ./hack/cluster up --dir .cluster

cluster-down: ## Stop the local cluster in .cluster/
	$(GO) run ./hack/cluster down --dir .cluster

# Plain go build and tar rather than a release tool: six static builds and a
# reproducible tar need nothing more, and nothing extra to pin or download.
dist: ## Archives for 6 platforms, checksums, and plugins/podsync.yaml rendered for them
	VERSION=$(VERSION) hack/dist.sh
	mkdir -p plugins
	$(GO) run ./hack/krew-manifest -dist dist -version $(VERSION) > plugins/podsync.yaml

clean: ## Remove build output (not the tool cache)
	rm -rf bin dist
