# shardlease — see README.md.
SHELL := /bin/bash
GO ?= go
GOBIN := $(shell $(GO) env GOPATH)/bin
STATICCHECK_VERSION := v0.8.2

.PHONY: all test test-unit lint sim bench tools

all: lint test

# test installs what the tests need and runs every test.
test: tools
	$(GO) vet ./...
	$(GO) test -count=1 ./...

tools:
	@test -x $(GOBIN)/staticcheck || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

lint: tools
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GOBIN)/staticcheck ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
