# Praetor. `make run` starts everything embedded; `make test` runs the tests
# (and, on a Debian machine as root, installs and starts the servers they need).

GO       ?= go
BIN      ?= bin/praetor
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)

.PHONY: build run test test-short lint bench bench-workflows clean

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/praetor

## run: praetor dev — NATS, SQLite and every service in one process, page on http://127.0.0.1:8080
run: build
	$(BIN) dev

## test: every test, with the race detector, against real NATS, PostgreSQL and Neo4j
test:
	scripts/test.sh

## test-short: unit tests only, no servers
test-short:
	$(GO) test -short -count=1 ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

## bench: the benchmarks that carry the performance goals (see README)
bench:
	$(GO) test -run '^$$' -bench 'Throughput|Latency5k' -benchtime 20000x -count 3 ./pkg/events/

bench-workflows:
	$(GO) test -run '^$$' -bench 'FanOutFanInJetStream|RawJetStream' -benchtime 10x ./services/orchestrator/dispatch/

clean:
	rm -rf bin .praetor
