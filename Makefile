# The one entry point. `make help` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

BIN := $(CURDIR)/bin
# The patched Go every build and test uses, fetched once by the go command
# through the module proxy (the go.mod files name it, so an older Go refuses).
export GOTOOLCHAIN := go1.27.3
export PATH := $(BIN):$(PATH)
# Every module of go.work; `go test ./...` does not cross module boundaries.
MODULES = $(shell GOTOOLCHAIN=$(GOTOOLCHAIN) go list -m -f '{{.Dir}}')
TOOLS_STAMP := $(BIN)/.tools-stamp
# The binaries `make build` puts in bin/: the one CLI and each service alone.
CMDS := ./cli/cmd/switchboard ./services/registry/cmd/registry ./services/mailbox/cmd/mailbox \
	./services/bridge/cmd/bridge ./services/gateway/cmd/gateway ./services/host/cmd/host
# Where `make run` keeps the registry's store (git-ignored).
DATA ?= .data

.PHONY: help tools browser conformance conformance-test generate check-generate lint vulncheck build test run bench soak images image-context images-prebuilt \
	compose-cli compose-test clean

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-15s %s\n", $$1, $$2}'

tools: $(TOOLS_STAMP) browser conformance ## install pinned buf, protoc plugins, grpcurl and the MCP test servers into bin/, Chromium, and the MCP conformance suite

# The console's browser test drives headless Chromium: Debian's package, from
# apt (we never commit a fetched browser). Installed only when it is missing.
browser: ## install /usr/bin/chromium with apt when it is missing (the console's browser test)
	@if [ ! -x /usr/bin/chromium ]; then \
		sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		echo "installing chromium with apt for the console's browser test"; \
		$$sudo apt-get update && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; fi

# The official MCP conformance suite and the Node it needs (>= 22; Debian's
# is 20), from npm at the versions tools/conformance locks, into
# bin/conformance for tests/conformance. npm comes from apt when missing.
CONFORMANCE := $(BIN)/conformance
conformance: $(CONFORMANCE)/.stamp ## install the MCP conformance suite (npm) into bin/conformance
$(CONFORMANCE)/.stamp: tools/conformance/package.json tools/conformance/package-lock.json
	@if ! command -v npm >/dev/null; then \
		sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		echo "installing npm with apt for the MCP conformance suite"; \
		$$sudo apt-get update && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y npm; fi
	rm -rf $(CONFORMANCE) && mkdir -p $(CONFORMANCE)
	cp tools/conformance/package.json tools/conformance/package-lock.json $(CONFORMANCE)/
	cd $(CONFORMANCE) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

$(TOOLS_STAMP): tools/go.mod tools/go.sum tools/buf/go.mod tools/buf/go.sum tools/vulndb/go.mod tools/vulndb/go.sum $(wildcard tools/protoc-gen-openapi31/*.go)
	@mkdir -p $(BIN)
	cd tools && GOWORK=off GOBIN=$(BIN) go install tool
	cd tools/buf && GOWORK=off GOBIN=$(BIN) go install tool
	cd tools/vulndb && GOWORK=off GOBIN=$(BIN) go install tool
	@touch $@

# The Go vulnerability database govulncheck reads offline: the OSV files of
# the golang.org/x/vulndb snapshot tools/vulndb pins (fetched through the Go
# module proxy), indexed once per snapshot into bin/vulndb.
VULNDB := $(BIN)/vulndb
$(VULNDB)/index/db.json: $(TOOLS_STAMP)
	rm -rf $(VULNDB)
	$(BIN)/indexdb -vulns "$$(cd tools/vulndb && GOWORK=off go list -m -f '{{.Dir}}' golang.org/x/vulndb)/data/osv" -out $(VULNDB)

generate: tools ## regenerate gen/ from proto/
	buf generate

check-generate: generate ## fail when gen/ is not what proto/ generates
	@if [ -n "$$(git status --porcelain -- gen)" ]; then \
		git status --porcelain -- gen; \
		echo "gen/ is stale: run make generate and commit the result"; exit 1; fi

lint: tools vulncheck ## buf lint and format, gofmt; each module alone: go mod tidy -diff, go vet; govulncheck
	buf lint
	buf format -d --exit-code
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^gen/')); \
		if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@# Each module must build and tidy on its own go.mod (siblings by require +
	@# replace), so go.work is a convenience, never what makes a module build.
	@for dir in $(MODULES); do mod=$${dir#$(CURDIR)/}; \
		(cd $$dir && GOWORK=off go mod tidy -diff) || { \
			echo "module $$mod is not tidy on its own: run (cd $$mod && GOWORK=off go mod tidy) and commit go.mod and go.sum"; exit 1; }; \
		(cd $$dir && GOWORK=off go vet ./...) || { echo "module $$mod does not vet on its own (GOWORK=off)"; exit 1; }; \
	done

# Fails on a vulnerability the code reaches (govulncheck's exit 3), in the
# standard library of the pinned Go or in a dependency; one only imported is
# reported, not failed on. docs/architecture.md says where the database
# comes from and how to take newer entries.
vulncheck: tools $(VULNDB)/index/db.json ## govulncheck every module against the pinned vulnerability database, offline
	@for dir in $(MODULES); do echo "govulncheck $${dir#$(CURDIR)/}"; \
		govulncheck -C $$dir -db file://$(VULNDB) ./... || exit 1; done

# Built as the Dockerfile builds them (static, -trimpath), so bin/ holds the
# binaries the image ships, and the deploy test's run of the Dockerfile's
# own build finds every package compiled already (only linking is left).
build: ## build the binaries into bin/ (bin/switchboard is the main one)
	@mkdir -p $(BIN)
	CGO_ENABLED=0 go build -trimpath -o $(BIN)/ $(CMDS)

test: lint check-generate build ## lint, check gen/, and test every module with the race detector
	go test -race -count=1 -timeout 15m $(addsuffix /...,$(MODULES))

run: build tools ## run the whole suite in one process: gRPC on 127.0.0.1:7737, HTTP on 127.0.0.1:8080
	$(BIN)/switchboard dev --data $(DATA) $(RUN_ARGS)

bench: build tools ## measure the suite against its floors; writes bench/results.json
	go run ./bench -out bench/results.json

images: ## build the container image (needs a Docker engine)
	docker build -t switchboard:dev .

# The context of Dockerfile.prebuilt: the image's programs built as the
# Dockerfile's build stage builds them (static, -trimpath, -s -w; the MCP
# server at the version tools/go.mod pins), and the base's files it keeps.
IMAGE_CONTEXT := $(BIN)/image
GO_IMAGE_BUILD := CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o $(IMAGE_CONTEXT)/
image-context: ## fill bin/image, the context of Dockerfile.prebuilt
	@test -f /etc/ssl/certs/ca-certificates.crt || { \
		echo "/etc/ssl/certs/ca-certificates.crt is missing: install the ca-certificates package (the image ships that CA bundle)"; exit 1; }
	@rm -rf $(IMAGE_CONTEXT)
	$(GO_IMAGE_BUILD) ./cli/cmd/switchboard ./deploy/cmd/switchboard-echo
	cd tools && GOWORK=off $(GO_IMAGE_BUILD) github.com/modelcontextprotocol/go-sdk/conformance/everything-server
	install -d -m 0755 $(IMAGE_CONTEXT)/base/etc/ssl/certs $(IMAGE_CONTEXT)/base/home $(IMAGE_CONTEXT)/empty
	install -d -m 1777 $(IMAGE_CONTEXT)/base/tmp
	install -d -m 0700 $(IMAGE_CONTEXT)/home/nonroot
	install -m 0644 deploy/image/passwd deploy/image/group $(IMAGE_CONTEXT)/base/etc/
	install -m 0644 /etc/ssl/certs/ca-certificates.crt $(IMAGE_CONTEXT)/base/etc/ssl/certs/

ENGINE ?= docker
images-prebuilt: image-context ## build switchboard:dev from this machine's binaries, pulling nothing (ENGINE=podman for podman)
	$(ENGINE) build -q -f Dockerfile.prebuilt -t $${SWITCHBOARD_IMAGE:-switchboard:dev} $(IMAGE_CONTEXT)

# Docker's compose CLI at the version tools/compose pins, for an engine
# without a compose of its own (podman's API socket).
compose-cli: $(BIN)/docker-compose
$(BIN)/docker-compose: tools/compose/go.mod tools/compose/go.sum
	@mkdir -p $(BIN)
	cd tools/compose && GOWORK=off CGO_ENABLED=0 go build -trimpath -o $@ \
		-ldflags="-s -w -X github.com/docker/compose/v5/internal.Version=$$(GOWORK=off go list -m -f '{{.Version}}' github.com/docker/compose/v5)" \
		github.com/docker/compose/v5/cmd

# COMPOSE_RUN picks the tests (default every one: the image check, the
# tour and the fault drill, as CI runs them).
COMPOSE_RUN ?= ^TestEngine
compose-test: build tools ## run both compose files on a real engine (podman, installed as root where none works): tour, faults, down -v
	deploy/engine.sh go test -count=1 -timeout 25m -v -run '$(COMPOSE_RUN)' ./deploy/ ./tests/compose/

# make test runs it too; this runs it alone, with every check's outcome.
conformance-test: build tools ## run the official MCP conformance suite directly and through Switchboard
	go test -count=1 -timeout 15m -v -run TestTheConformanceSuite ./tests/conformance/

SOAK ?= 2m
soak: build tools ## the long forms: load for $(SOAK), alone and under each fault (SOAK=10m make soak), the fault tests five times over, 10,000 and 100,000 parked hosts
	SWITCHBOARD_SOAK=$(SOAK) go test -race -count=1 -timeout 60m -v -run 'TestDriversAndHostsLoseNothing|UnderLoadLosesNothing' ./tests/soak/
	go test -race -count=5 -timeout 60m ./tests/faults/
	# Ten thousand parked hosts at three copies (make test parks 300), without the race detector,
	# which slows the test's in-process NATS cluster several times over (docs/scale.md).
	SWITCHBOARD_SCALE_HOSTS=10000 go test -count=1 -timeout 30m -v -run TestParkedHosts ./tests/scale/
	# The scale step at 100,000 hosts on one NATS node (make bench parks 10,000; docs/scale.md).
	go run ./bench -only scale -scale-hosts 100000 -out bench/results-soak.json

clean: ## remove bin/ and the dev data dir
	rm -rf $(BIN) .data
