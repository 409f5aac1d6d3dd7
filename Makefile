# kubectl-podsync. `make help` lists the targets.
GO      ?= go
MODULE  := github.com/kubectl-podsync/kubectl-podsync
# The version comes from git: the nearest tag, else v0.0.0-dev.
VERSION ?= $(shell git describe --tags --match 'v*' --dirty 2>/dev/null || echo v0.0.0-dev)
LDFLAGS := -s -w -X $(MODULE)/pkg/version.Version=$(VERSION)
# Whole-suite budget: the end-to-end tests run a real control plane.
TEST_TIMEOUT ?= 40m
# Executions per fuzz target in `make fuzz` (and so in `make test`): counts,
# not durations, because go1.26's fuzz coordinator can fail a timed run at
# its deadline with a bare "context deadline exceeded" (golang/go#75804).
# FUZZTIME (a count like 500x or a duration like 30m) sets every target.
FUZZ_MODEL_RUNS  ?= 8x
FUZZ_PARSER_RUNS ?= 20000x
FUZZ_WRITER_RUNS ?= 20000x
fuzz_model  = $(or $(FUZZTIME),$(FUZZ_MODEL_RUNS))
fuzz_parser = $(or $(FUZZTIME),$(FUZZ_PARSER_RUNS))
fuzz_writer = $(or $(FUZZTIME),$(FUZZ_WRITER_RUNS))

# The scale benchmark is a Go module of its own (hack/bench), like the lint pin
# (hack/tools/lint): `go test ./...` at the root does not reach it.
BENCH_MOD := hack/bench
# Fuzz executions per target in the fast lane (`make check`): enough to
# run each target's corpus and a few hundred new inputs. At 2,000 the costly
# targets (the duration flags build a command per input, the GitHub output
# renders every format) spent a third of their CPU time on the last 1,500.
CHECK_FUZZ_MODEL_RUNS  ?= 2x
CHECK_FUZZ_PARSER_RUNS ?= 500x
CHECK_FUZZ_WRITER_RUNS ?= 500x
UNIT_FLAGS ?= -race
# The end-to-end tests make test runs a second time with podsync's own pod
# decoder switched off (PODSYNC_FEATURE_FastCodec=false): what they compare
# with kubectl then comes through client-go's standard decoding.
CODEC_OFF_TESTS ?= ^(TestTableFidelity|TestOutputJSON|TestOutputYAML|TestOutputTemplates|TestStreamedListPrintsAsPaginated|TestWatchOnly)$$

.PHONY: help build tools check test unit e2e soak soak-verdicts bench fuzz fuzz-smoke vet lint readme demo cluster-up cluster-down dist validate-krew clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

build: ## Build bin/kubectl-podsync
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/kubectl-podsync ./cmd/kubectl-podsync

tools: ## Build the pinned control plane (etcd, kube-*, kubectl, kwok) into the cache
	hack/build-tools.sh

vet: ## gofmt, go vet and go.mod tidiness (the product and hack/bench), README flag table, tracked files (none over 1 MiB, no binary), krew index rules, actionlint, golangci-lint
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo 'gofmt needed'; exit 1; }
	$(GO) vet ./...
	cd $(BENCH_MOD) && $(GO) vet ./...
	$(GO) mod tidy -diff
	cd hack/tools/lint && $(GO) mod tidy -diff
	cd hack/tools/actionlint && $(GO) mod tidy -diff
	cd $(BENCH_MOD) && $(GO) mod tidy -diff
	$(GO) run ./hack/update-readme -verify
	$(GO) run ./hack/check-tracked
	$(GO) run ./hack/krew-manifest -check .krew.yaml plugins/podsync.yaml
	hack/actionlint.sh
	hack/lint.sh

lint: ## golangci-lint (.golangci.yml), pinned in hack/tools/lint and built once into the cache
	hack/lint.sh

readme: ## Regenerate README.md's flag table from the command's flags
	$(GO) run ./hack/update-readme

# The fast lane for every change: everything that needs no control plane.
# Its unit tests run with -short (the model plays 200 histories, not 2,000)
# and the race detector, as in make test: a race is a unit failure too.
check: vet ## Fast lane, under 5 minutes warm: vet and lint, unit tests (-short, -race), a short fuzz of every target
	$(MAKE) --no-print-directory unit UNIT_FLAGS='-race -short'
	$(MAKE) --no-print-directory fuzz-smoke
	@echo 'check: passed (make test is the full gate)'

# .ci/run runs make check first, then make test with SKIP_VET=1: vet and lint
# have passed by then and take minutes. Alone, make test is the full gate.
test: $(if $(SKIP_VET),,vet) fuzz ## The full gate: vet, fuzz, every test, unit and end-to-end against a local control plane, with -race; the fidelity and format tests again with podsync's decoder off
	PODSYNC_TOOLS_BIN="$$(hack/build-tools.sh)" $(GO) test -race -count=1 -p 1 -timeout $(TEST_TIMEOUT) ./...
	PODSYNC_FEATURE_FastCodec=false PODSYNC_TOOLS_BIN="$$(hack/build-tools.sh)" $(GO) test -race -count=1 -p 1 -timeout $(TEST_TIMEOUT) -run '$(CODEC_OFF_TESTS)' ./test/e2e
	cd $(BENCH_MOD) && $(GO) test -race -count=1 ./...

unit: ## Unit tests only (no control plane), hack/bench's included; UNIT_FLAGS (default -race) go to go test
	$(GO) test $(UNIT_FLAGS) -count=1 $$($(GO) list ./... | grep -v -e /test/ -e /internal/localcluster)
	cd $(BENCH_MOD) && $(GO) test $(UNIT_FLAGS) -count=1 ./...

fuzz: ## Fuzz the model of a run (8 histories), the --until, --fail-on and duration parsers, the parsers of the server's bytes and the JSON writer, the health rules' parser, the terminal escaping, and the GitHub Actions output against the runner's command parsers (20,000 inputs each)
	$(GO) test -run '^$$' -fuzz '^FuzzModel$$' -fuzztime $(fuzz_model) ./pkg/podsync
	$(GO) test -run '^$$' -fuzz '^FuzzParseConditions$$' -fuzztime $(fuzz_parser) ./pkg/check
	$(GO) test -run '^$$' -fuzz '^FuzzParseReasons$$' -fuzztime $(fuzz_parser) ./pkg/check
	$(GO) test -run '^$$' -fuzz '^FuzzDurationFlags$$' -fuzztime $(fuzz_parser) ./pkg/cmd
	$(GO) test -run '^$$' -fuzz '^FuzzDecodePod$$' -fuzztime $(fuzz_parser) ./pkg/source/wire
	$(GO) test -run '^$$' -fuzz '^FuzzWalkTakesOnlyWhatDecodes$$' -fuzztime $(fuzz_parser) ./pkg/source/wire
	$(GO) test -run '^$$' -fuzz '^FuzzReadPodList$$' -fuzztime $(fuzz_parser) ./pkg/source/wire
	$(GO) test -run '^$$' -fuzz '^FuzzWatchFrames$$' -fuzztime $(fuzz_parser) ./pkg/source/wire
	$(GO) test -run '^$$' -fuzz '^FuzzTableCells$$' -fuzztime $(fuzz_parser) ./pkg/source/wire
	$(GO) test -run '^$$' -fuzz '^FuzzPodJSON$$' -fuzztime $(fuzz_parser) ./pkg/source/wire
	$(GO) test -run '^$$' -fuzz '^FuzzGitHubOutput$$' -fuzztime $(fuzz_writer) ./pkg/output
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(fuzz_parser) ./pkg/health
	$(GO) test -run '^$$' -fuzz '^FuzzEscape$$' -fuzztime $(fuzz_parser) ./internal/text

fuzz-smoke: ## The fuzz targets of make fuzz with small counts (part of make check)
	$(MAKE) --no-print-directory fuzz FUZZ_MODEL_RUNS=$(CHECK_FUZZ_MODEL_RUNS) FUZZ_PARSER_RUNS=$(CHECK_FUZZ_PARSER_RUNS) FUZZ_WRITER_RUNS=$(CHECK_FUZZ_WRITER_RUNS) FUZZTIME=

# The scale benchmark: not part of `make test` (test/bench runs a small
# smoke of it there). It takes about two hours at the default sizes on two
# cores (loading 150,000 pods alone takes about 20 minutes); pass other flags
# with BENCH_ARGS, e.g. BENCH_ARGS='-pods 5000 -runs 3'. Small pods (about 2.8 KB
# each as served) let the API server hold 150,000 of them on a 24 GiB machine.
# The report goes to stdout and to BENCH_OUT, outside the repository's tracked
# files (bin/ is ignored). The bench is built from its module, then run from
# the repository root, where it builds the plugin. At the end, on a cluster
# of its own, it gates 1,000 Ready custom resources with podsync -f against
# kubectl wait (-crs; BENCH_ARGS=-crs-only runs only that).
BENCH_ARGS ?= -pods 5000,50000,150000 -pod-shape small -runs 5 -rate 250 -duration 60s
BENCH_OUT  ?= bin/bench-report.md
bench: ## podsync against kubectl and the floor at 5k/50k/150k pods, churn lag, verdict latency, and 1,000 custom resources against kubectl wait; report in bin/bench-report.md or BENCH_OUT (see docs/BENCHMARKS.md)
	mkdir -p bin $(dir $(BENCH_OUT))
	cd $(BENCH_MOD) && $(GO) build -o $(CURDIR)/bin/bench .
	PODSYNC_TOOLS_BIN="$$(hack/build-tools.sh)" bin/bench $(BENCH_ARGS) -out $(BENCH_OUT)

# The long soak: not part of `make test`, which runs its short variant (90 s,
# a limit of a few hundred bytes per change). SOAK_DURATION, SOAK_STEPS (steps
# of churn per second, three writes each) and SOAK_MAX_SLOPE (bytes per change)
# set it; SOAK_PROFILES=DIR keeps each watcher's heap profiles (see docs/design.md).
SOAK_DURATION  ?= 10m
SOAK_STEPS     ?= 15
SOAK_MAX_SLOPE ?= 40
SOAK_PROFILES  ?=
soak: ## Three podsync runs for SOAK_DURATION (10m) under churn and API server restarts: fails when the live heap grows with the changes seen
	PODSYNC_TOOLS_BIN="$$(hack/build-tools.sh)" PODSYNC_SOAK_DURATION=$(SOAK_DURATION) PODSYNC_SOAK_WARMUP=2m \
	PODSYNC_SOAK_STEPS=$(SOAK_STEPS) PODSYNC_SOAK_MAX_SLOPE=$(SOAK_MAX_SLOPE) PODSYNC_SOAK_PROFILES=$(SOAK_PROFILES) \
	$(GO) test -race -count=1 -timeout 2h -run '^TestHeapFollowsPodsNotChanges$$' -v ./test/soak/

e2e: ## End-to-end tests only
	PODSYNC_TOOLS_BIN="$$(hack/build-tools.sh)" $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -v ./test/e2e/

# The random side-by-side suite (test/verdicts): make test plays its few
# default seeds and its regression cases with every other package; this
# plays SEEDS more, from FIRST (default: the clock, printed), PARALLEL at
# a time in one cluster. A failing seed prints how to reproduce it;
# SHRINK=1 shrinks it to its shortest failing sequence of steps.
SEEDS    ?= 100
FIRST    ?= $(shell date +%s)
PARALLEL ?= 12
soak-verdicts: ## Play SEEDS random scenarios (default 100) beside kubectl and kstatus; FIRST, PARALLEL, SHRINK=1
	@echo 'soak-verdicts: seeds $(FIRST) to $(shell expr $(FIRST) + $(SEEDS) - 1)'
	PODSYNC_TOOLS_BIN="$$(hack/build-tools.sh)" VERDICTS_SHRINK=$(SHRINK) $(GO) test -count=1 -timeout 0 -run '^TestVerdicts$$' \
		./test/verdicts -test.parallel $(PARALLEL) -first $(FIRST) -seeds $(SEEDS)

demo: ## Build everything, start a local cluster in .cluster/ and show kubectl podsync on it
	hack/demo.sh

cluster-up: ## Start (only) the local cluster in .cluster/
	$(GO) run ./hack/cluster up --dir .cluster

cluster-down: ## Stop the local cluster in .cluster/
	$(GO) run ./hack/cluster down --dir .cluster

# Plain go build and tar rather than a release tool: six static builds and a
# reproducible tar need nothing more, and nothing extra to pin or download.
# dist/podsync.yaml belongs to the archives of one build; plugins/podsync.yaml
# is the committed manifest of the release submitted to krew-index by hand
# (docs/releases.md), and make dist leaves it alone.
dist: ## Archives for 6 platforms, checksums, and the krew manifest dist/podsync.yaml rendered for them
	DIST=$(CURDIR)/dist PLATFORMS= VERSION=$(VERSION) hack/dist.sh

validate-krew: ## After make dist: krew's validate-krew-manifest installs every platform (archives served on loopback)
	PATH="$$(hack/build-tools.sh):$$PATH" $(GO) run ./hack/krew-manifest -validate -dist dist -committed dist/podsync.yaml

clean: ## Remove build output (not the tool cache)
	rm -rf bin dist
