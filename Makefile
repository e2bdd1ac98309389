# jetlake development tasks. `make test` is what CI runs.
#
# Integration tests and the demo start real servers: nats-server and MinIO at
# pinned versions, built once with `go install` into $(CACHE) and reused from
# there (the first MinIO build takes several minutes).

CACHE         ?= $(HOME)/.cache/jetlake
NATS_VERSION  := v2.15.2
MINIO_VERSION := v0.0.0-20260212201848-7aac2a2c5b7c
NATS_SERVER   := $(CACHE)/nats-server-$(NATS_VERSION)/nats-server
MINIO         := $(CACHE)/minio-$(MINIO_VERSION)/minio

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

# Packages without I/O: every test of theirs runs with the race detector too.
CORE := ./buffer/... ./formats/... ./pathtemplate/... ./lossmarker/... ./config/...

# Flags of make test's run of every test: three test packages at a time, and
# up to four parallel tests in each (most integration tests wait on servers
# and timers, not on the CPU).
TEST_FLAGS ?= -p 3 -parallel 4

.PHONY: build servers postgres test short fmt vet bench demo clean

## build: build bin/jetlake, stamped with VERSION
build:
	go build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o bin/jetlake ./cmd/jetlake

## servers: build the pinned nats-server and MinIO into CACHE if missing
servers: $(NATS_SERVER) $(MINIO)

$(NATS_SERVER):
	GOBIN=$(dir $@) go install github.com/nats-io/nats-server/v2@$(NATS_VERSION)

$(MINIO):
	GOBIN=$(dir $@) go install github.com/minio/minio@$(MINIO_VERSION)

## postgres: install Debian's postgresql package when no PostgreSQL server is
## under /usr/lib/postgresql: the Iceberg catalog tests start their own on a
## free loopback port with a temporary data directory
postgres:
	@if ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then :; else \
		echo "installing Debian's postgresql package"; \
		sudo=; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
		$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq postgresql; \
	fi

## test: format check, vet, then every test (integration and chaos included)
## and, beside it at a lower CPU priority, the pure packages and the unit
## tests of exporter/ and internal/ with -race. cmd/jetlake-testtimes runs
## the three go test commands side by side, prints their output as go test
## does, and ends with the time of each package and the ten slowest tests.
## About 5 minutes on an otherwise idle 2-core machine.
test: export JETLAKE_NATS_SERVER := $(NATS_SERVER)
test: export JETLAKE_MINIO := $(MINIO)
test: servers postgres
	@unformatted="$$(gofmt -l .)"; \
	if [ -n "$$unformatted" ]; then \
		echo "gofmt: these files need formatting (run make fmt):"; \
		echo "$$unformatted"; \
		exit 1; \
	fi
	go vet ./...
	go vet -tags jetlakefault ./exporter/... ./internal/...
	go run ./cmd/jetlake-testtimes \
		"go test -count=1 -timeout 30m $(TEST_FLAGS) ./..." \
		"nice -n 10 go test -race -count=1 -timeout 30m $(CORE)" \
		"nice -n 10 go test -race -short -count=1 -timeout 30m ./exporter/... ./internal/..."

## short: the fast inner loop: every unit test, no server started
short:
	go test -short -count=1 ./...

## fmt: format every Go file
fmt:
	gofmt -w .

## vet: run go vet
vet:
	go vet ./...

## bench: build jetlake, run the Go micro-benchmarks, then cmd/jetlake-bench:
## jetlake against the consume and upload limits of this machine, measured in
## the same run (one table on stdout, JSON in bin/bench.json; about 9 minutes
## on 2 cores, never more than 15). Pass flags with BENCH_FLAGS, e.g.
## make bench BENCH_FLAGS=-quick, or BENCH_FLAGS="-compare old.json" for the
## change against an earlier bin/bench.json
bench: export JETLAKE_NATS_SERVER := $(NATS_SERVER)
bench: export JETLAKE_MINIO := $(MINIO)
bench: build servers
	go test -run '^$$' -bench . -benchmem ./formats/... ./pathtemplate/... ./buffer/... ./exporter/... ./internal/...
	go run ./cmd/jetlake-bench -out bin/bench.json $(BENCH_FLAGS)

## demo: run jetlake against local servers (see cmd/jetlake-demo)
demo: export JETLAKE_NATS_SERVER := $(NATS_SERVER)
demo: export JETLAKE_MINIO := $(MINIO)
demo: build servers
	go run ./cmd/jetlake-demo

## clean: remove build output (the server cache stays)
clean:
	rm -rf bin
