# shardlease — see README.md.
SHELL := /bin/bash
GO ?= go
GOBIN := $(shell $(GO) env GOPATH)/bin
STATICCHECK_VERSION := v0.8.2
# MUTATIONS builds the engine's planted bugs in (package internal/planted):
# the tests that show the checkers catch them need it; production builds
# never have it.
MUTATIONS := -tags shardlease_mutations

.PHONY: all test test-unit lint sim bench tools

all: lint test

# test installs what the tests need (staticcheck, Debian's chromium for the
# report render test and prometheus for the rule tests and the live chaos
# run, toxiproxy, the local AWS-compatible servers through npm ci), runs
# every test with the servers up (a test that needs them, chromium or
# prometheus fails rather than skips), then the short live chaos run.
test: tools chromium prometheus toxiproxy
	$(GO) vet ./...
	$(GO) vet $(MUTATIONS) ./...
	$(GO) build -o /dev/null ./examples/consumer
	$(GO) test -count=1 ./engine ./sim
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./engine/kpl
	SHARDLEASE_REQUIRE_CHROMIUM=1 SHARDLEASE_REQUIRE_PROMETHEUS=1 SHARDLEASE_REQUIRE_LOCALAWS=1 scripts/localaws.sh run -- $(GO) test $(MUTATIONS) -count=1 -timeout 45m ./...
	$(MAKE) fuzz
	$(MAKE) test-chaos

.PHONY: fuzz
# fuzz runs each Go fuzz target for FUZZTIME (go test allows one -fuzz
# target per run). New failing inputs are written under the package's
# testdata/fuzz/ and replay in every later go test. The default is a count
# of executions (about 10 s each on 2 cores), not a duration: Go 1.26's
# fuzz coordinator can fail a run whose -fuzztime deadline lands while a
# worker is mid-call ("context deadline exceeded" and no failing input;
# golang/go#75804, fixed in Go 1.27), and a count sets no deadline.
FUZZTIME ?= 150000x
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeLease$$' -fuzztime $(FUZZTIME) ./engine/dynamostore
	$(GO) test -run '^$$' -fuzz '^FuzzSequences$$' -fuzztime $(FUZZTIME) ./engine

# sim is the main job: the default simulation sweep (scenario swarm, seeds
# 1-32, on the in-memory fakes) with a summary and a report under
# reports/out/.
sim:
	$(GO) run ./cmd/simrun

tools:
	@test -x $(GOBIN)/staticcheck || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

lint: tools
	$(GO) vet ./...
	$(GO) vet $(MUTATIONS) ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) mod tidy -diff
	$(GOBIN)/staticcheck ./...
	$(GOBIN)/staticcheck $(MUTATIONS) ./...

# bench measures the simulator's figures (simrun -bench; see
# docs/simulation-speed.md for how long it takes): CPU time (user+sys) and
# peak RSS of a simrun process per world (10x100 and 100x2000 for one
# virtual hour and 10 minutes, CPU per event from 1x100 to 100x2000,
# 1000x10000 for 10 virtual minutes, seeds per CPU second of the default
# swarm) into reports/bench.json, with issues 9's and 18's targets met or
# not and the tables the docs quote; then every package benchmark once
# (trace hash, checkers, fakes, linearizability, engine). It fails (after
# the package benchmarks) if a target is missed, naming it. The go
# benchmarks of package sim (BenchmarkSim*, -sim.big) stay available by
# hand.
bench:
	st=0; $(GO) run ./cmd/simrun -bench reports/bench.json || st=1; \
	$(GO) test -run '^$$' -bench . -benchmem ./sim/trace/... ./sim/check/... ./fakes/... ./linearizability/... ./engine/... || st=1; \
	exit $$st

# Local AWS-compatible servers (dynalite, kinesalite) on 127.0.0.1; see
# scripts/localaws.sh. After localaws-start, run tests against them with
# SHARDLEASE_LOCALAWS=1 (or `eval $(scripts/localaws.sh env)`).
.PHONY: localaws-start localaws-stop test-contract
localaws-start:
	scripts/localaws.sh start

localaws-stop:
	scripts/localaws.sh stop

# test-contract starts a private pair of local servers, runs the adapters'
# and the fakes' contract tests against them (a missing server fails, never
# skips), and always stops the servers.
test-contract:
	SHARDLEASE_REQUIRE_LOCALAWS=1 scripts/localaws.sh run -- \
		$(GO) test -count=1 ./engine/dynamostore/... ./engine/kinesisstream/... ./fakes/...

.PHONY: swarm
# swarm runs SEEDS swarm seeds of the simulator against the engine (default 1000).
SEEDS ?= 1000
swarm:
	@set -o pipefail; $(GO) test -count=1 -v -timeout 60m ./sim -run '^TestSwarm$$' -sim.seeds=$(SEEDS) \
		| grep -vE '^(=== (RUN|PAUSE|CONT)|        --- PASS)'

.PHONY: soak
# soak runs swarm seeds 1-SEEDS on every core (simrun -soak; a fifth of
# them driver worlds, -driver-share): a progress bar, seeds/s and tier
# counts; its state (reports/out/soak/swarm/state.json)
# lets a stopped soak (Ctrl-C) go on where it was when started again, and
# every failing seed is saved with its replay command under
# reports/out/soak/swarm/findings. SOAK_FLAGS adds simrun flags (another
# -scenario, -faults, -state, -findings).
soak:
	$(GO) run ./cmd/simrun -soak -seeds 1-$(SEEDS) $(SOAK_FLAGS)

.PHONY: soak-partitioned
# soak-partitioned runs the soak as PARTS processes at once, one partition
# each (simrun -soak -partition I/PARTS -parallel 1: what the pods of the
# Kubernetes Job in deploy/soak do, docs/soak.md), then merges them
# (simrun -soak-merge: totals, seeds/s, every finding; it fails if a seed
# is missing or ran twice). Each partition resumes on its own when started
# again; its output is in reports/out/soak-partitioned/part-I.log.
PARTS ?= 2
soak-partitioned:
	$(GO) build -o bin/simrun ./cmd/simrun
	mkdir -p reports/out/soak-partitioned
	for i in $$(seq 0 $$(($(PARTS) - 1))); do \
		bin/simrun -soak -seeds 1-$(SEEDS) -partition $$i/$(PARTS) -parallel 1 -soak-dir reports/out/soak-partitioned $(SOAK_FLAGS) \
			> reports/out/soak-partitioned/part-$$i.log 2>&1 & \
	done; wait
	bin/simrun -soak-merge reports/out/soak-partitioned

# ---- cmd/live: local AWS-compatible servers, demo and live chaos runs ----
# The servers these targets start have their own state directory, so they
# never stop servers that other targets or people started.
LIVE_LOCALAWS_STATE := $(CURDIR)/.tmp/localaws-live-chaos
TOXIPROXY_VERSION := v2.5.0

.PHONY: toxiproxy test-chaos chaos live-local

# toxiproxy installs toxiproxy's server (binary "server") into $(GOBIN) if missing.
toxiproxy:
	@$(GOBIN)/server -version 2>/dev/null | grep -q toxiproxy || $(GO) install github.com/Shopify/toxiproxy/v2/cmd/server@$(TOXIPROXY_VERSION)

# test-chaos runs the short live chaos test (both initial positions, LATEST with enhanced fan-out against internal/efoserver, TRIM_HORIZON in etcd and with session renewal; ~2 min):
# worker processes built from cmd/live against dynalite/kinesalite, with kills,
# pauses, link faults, throttling, splits and merges; then `live check`.
# The servers are always stopped afterwards. On a failure it ends with the
# last lines each failing sub-test wrote (scripts/test-failures.sh): with
# -v they are printed among the other sub-tests' lines.
test-chaos: toxiproxy prometheus
	@export LOCALAWS_STATE_DIR=$(LIVE_LOCALAWS_STATE); \
	trap 'scripts/localaws.sh stop >/dev/null' EXIT; \
	scripts/localaws.sh start && \
	SHARDLEASE_LOCALAWS=1 SHARDLEASE_REQUIRE_LOCALAWS=1 SHARDLEASE_CHAOS=short TOXIPROXY_SERVER=$(GOBIN)/server \
		$(GO) test -count=1 -run '^TestLiveChaos$$' -v -timeout 10m ./cmd/live/ 2>&1 | tee $(LIVE_LOCALAWS_STATE)/chaos.log; \
	st=$${PIPESTATUS[0]}; [ $$st = 0 ] || scripts/test-failures.sh $(LIVE_LOCALAWS_STATE)/chaos.log; exit $$st

# chaos is the long form: four chaos cycles per initial position (~4 min).
chaos: toxiproxy prometheus
	@export LOCALAWS_STATE_DIR=$(LIVE_LOCALAWS_STATE); \
	trap 'scripts/localaws.sh stop >/dev/null' EXIT; \
	scripts/localaws.sh start && \
	SHARDLEASE_LOCALAWS=1 SHARDLEASE_REQUIRE_LOCALAWS=1 SHARDLEASE_CHAOS=long TOXIPROXY_SERVER=$(GOBIN)/server \
		$(GO) test -count=1 -run '^TestLiveChaos$$' -v -timeout 30m ./cmd/live/ 2>&1 | tee $(LIVE_LOCALAWS_STATE)/chaos.log; \
	st=$${PIPESTATUS[0]}; [ $$st = 0 ] || scripts/test-failures.sh $(LIVE_LOCALAWS_STATE)/chaos.log; exit $$st

# live-local starts the local servers and runs a producer and three workers
# (metrics on 127.0.0.1:9464-9466) until Ctrl-C (or DURATION seconds), then
# stops them gracefully and prints `live check`. WORKERS, SHARDS, RATE and
# DURATION adjust it.
live-local:
	cmd/live/live-local.sh

# ---- operating it: Prometheus rules (deploy/prometheus) ----
.PHONY: prometheus test-rules
# prometheus installs Debian's prometheus package (the server and promtool:
# the rule tests and the live chaos run's alerts) unless both are there.
prometheus:
	@test -x /usr/bin/promtool -a -x /usr/bin/prometheus || { \
		SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get update && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus; }

# test-rules checks the alerting and recording rules and runs their unit
# tests (make test runs them through go test ./deploy, with weakened rules
# that must fail them).
test-rules: prometheus
	cd deploy/prometheus && promtool check rules shardlease-rules.yaml && \
		promtool test rules shardlease-rules.test.yaml shardlease-renewals.test.yaml

# ---- simulator reports (cmd/simrun, reports/) ----
.PHONY: chromium report-example
# chromium installs Debian's Chromium, which the report test in reports/
# (headless) and report-example use, unless /usr/bin/chromium is there.
chromium:
	@test -x /usr/bin/chromium || { \
		SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get update && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; }

CHROMIUM_HEADLESS := /usr/bin/chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync --hide-scrollbars

# report-example regenerates the reports the README quotes, with their
# screenshots: reports/example (one passing swarm seed) and
# reports/example-violation (a sweep with a planted bug, which must fail).
report-example: chromium
	$(GO) run ./cmd/simrun -seed 20 -out reports/example
	$(GO) run ./cmd/simrun -seeds 1-8 -mutation unfenced-checkpoint -faults partition,pause,crash,clog \
		-workers 4 -shards 6 -chaos 60s -out reports/example-violation; test $$? -eq 1
	@set -e; for ex in example:1250 example-violation:1500; do \
		d=$${ex%%:*}; h=$${ex##*:}; tmp=$$(mktemp -d); \
		$(CHROMIUM_HEADLESS) --user-data-dir=$$tmp --window-size=1280,$$h \
			--screenshot=$(CURDIR)/reports/$$d/report.png file://$(CURDIR)/reports/$$d/report.html 2>/dev/null; \
		rm -rf $$tmp; echo "reports/$$d/report.png"; done

.PHONY: mutants
# mutants runs every planted bug simrun -list shows on seeds 1-200 of the
# default swarm (TestMutantsSwarm: as many seeds at a time as cores, no
# fault mix or scenario of its own) and the driver's on seeds 1-200 of the
# default driver worlds (TestDriverMutants: simrun -driver's worlds), asks
# the property suite whether it catches each (TestPropertyMutants:
# TestProperty's seed and checks), writes reports/mutants.json and the
# table between the markers (in docs/figures.md, or wherever they are:
# internal/mutants/report finds them), and fails if any bug survives every
# seed. MUTANTS_SLOW=1
# also runs TestMutationsCaught's slow cases (-sim.mutants: bugs on fault
# mixes chosen for them). MUTANTS_ONLY=a,b runs those bugs of the swarm
# alone (a partial report).
mutants:
	@mkdir -p reports/out
	set -o pipefail; st=0; \
	$(GO) test $(MUTATIONS) -count=1 -v -timeout 360m ./sim -run '^(TestMutantsSwarm|TestMutationsCaught)$$' \
		-sim.mutants.json=$(CURDIR)/reports/out/mutants-sim.json $(if $(MUTANTS_SLOW),-sim.mutants) $(if $(MUTANTS_ONLY),-sim.mutants.only=$(MUTANTS_ONLY)) \
		| grep -E 'caught|^(---|    ---|ok|FAIL)' || st=1; \
	$(GO) test $(MUTATIONS) -count=1 -v -timeout 60m ./sim/driversim -run '^TestDriverMutants$$' \
		-driversim.mutants.json=$(CURDIR)/reports/out/mutants-driver.json | grep -E 'caught|^(---|    ---|ok|FAIL)' || st=1; \
	$(GO) test $(MUTATIONS) -count=1 -v -timeout 120m ./scenarios -run '^TestPropertyMutants$$' -rapid.shrinktime=1s -rapid.nofailfile \
		-scenarios.mutants.json=$(CURDIR)/reports/out/mutants-property.json | grep -E 'caught|^(---|    ---|ok|FAIL)' || st=1; \
	$(GO) test $(MUTATIONS) -count=1 ./engine -run '^TestTestsCatchPlantedBugs$$' -engine.mutants.json=$(CURDIR)/reports/out/mutants-tests.json || st=1; \
	$(GO) test $(MUTATIONS) -count=1 ./sim -run '^(TestReadsFlatCatchesEveryWorkerScans|TestStaleSessionViewCaught|TestLatencyWorldsCaught)$$' -sim.tests.json=$(CURDIR)/reports/out/mutants-tests-sim.json || st=1; \
	$(GO) run ./internal/mutants/report -out reports/mutants.json \
		reports/out/mutants-sim.json reports/out/mutants-driver.json reports/out/mutants-property.json \
		reports/out/mutants-tests.json reports/out/mutants-tests-sim.json || st=1; \
	exit $$st

.PHONY: driversim
# driversim runs the production driver (engine.Consumer) in virtual time
# over 2,000 seeds (go test ./sim/driversim runs 100).
driversim:
	set -o pipefail; $(GO) test -count=1 -timeout 60m ./sim/driversim -run '^TestDriverSim$$' -driversim.seeds=$(or $(SEEDS),2000) -v | grep -E 'seeds in|FAIL|^ok'

.PHONY: sweep
# sweep runs the rapid property suites at scale (2,000 drawn cases inside
# the assumptions, 1,000 outside, 500 driver worlds) from a random rapid
# seed (go test uses a fixed one, see scenarios/main_test.go); failures are
# saved under scenarios/testdata/rapid/ and replay on every later go test.
sweep:
	$(GO) test -count=1 -timeout 120m ./scenarios -run '^TestProperty$$' -rapid.checks=2000 -rapid.shrinktime=2m -rapid.seed=0
	$(GO) test -count=1 -timeout 120m ./scenarios -run '^TestPropertyOutside$$' -rapid.checks=1000 -rapid.shrinktime=2m -rapid.seed=0
	$(GO) test -count=1 -timeout 120m ./scenarios -run '^TestPropertyDriver$$' -rapid.checks=500 -scenarios.driver.checks=500 -rapid.shrinktime=2m -rapid.seed=0
