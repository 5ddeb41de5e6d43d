# shardlease — see README.md.
SHELL := /bin/bash
GO ?= go
GOBIN := $(shell $(GO) env GOPATH)/bin
STATICCHECK_VERSION := v0.8.2

.PHONY: all test test-unit lint sim bench tools

all: lint test

# test installs what the tests need (staticcheck, the local AWS-compatible
# servers through npm ci) and runs every test with the servers up: a test
# that needs them fails rather than skips.
test: tools
	$(GO) vet ./...
	SHARDLEASE_REQUIRE_LOCALAWS=1 scripts/localaws.sh run -- $(GO) test -count=1 ./...

tools:
	@test -x $(GOBIN)/staticcheck || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

lint: tools
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GOBIN)/staticcheck ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

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
	$(GO) test -count=1 -timeout 60m ./sim -run '^TestSwarm$$' -sim.seeds=$(SEEDS)
