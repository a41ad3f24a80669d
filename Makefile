# OutaTime — build, run and test.
#
#   make run     start the server on 127.0.0.1:1985, database under ./data
#   make test    run every test
#   make help    list all targets
#
# Variables: SWIFT (the swift driver), ARGS (extra server flags for `run`),
# HOST, PORT, DB (where `run` listens and stores), TEST_ARGS (for `swift test`),
# TRIALS and CRASH_ARGS (for `crash-trials`), FUZZ_SECONDS (per fuzz target, for `fuzz`).

SWIFT     ?= swift
ARGS      ?=
HOST      ?= 127.0.0.1
PORT      ?= 1985
DB        ?= ./data/outatime.sqlite
TEST_ARGS ?=
TRIALS    ?= 10
CRASH_ARGS ?=
FUZZ_SECONDS ?= 60

# Debian packages the build needs: libuv for the event loop, SQLite for GRDB,
# OpenSSL 3 for TLS (and the openssl command, which the TLS tests use).
DEBIAN_PACKAGES := libuv1-dev libsqlite3-dev libssl-dev openssl

# Root installs directly; anyone else goes through sudo when it exists.
SUDO := $(shell if [ "$$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then echo sudo; fi)

SERVER_BIN := .build/debug/outatime-server

.DEFAULT_GOAL := help

.PHONY: help deps test-deps build run test test-python crash-trials release fuzz bench-peers bench-commands clean

help: ## List the targets
	@echo "OutaTime — make targets:"
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-15s %s\n", $$1, $$2}'
	@echo
	@echo "Variables: SWIFT=$(SWIFT) HOST=$(HOST) PORT=$(PORT) DB=$(DB)"
	@echo "           ARGS='extra server flags', e.g. make run ARGS='--log-level debug'"

deps: ## Install the Debian packages libuv1-dev, libsqlite3-dev, libssl-dev and openssl if missing
	@if command -v dpkg-query >/dev/null 2>&1; then \
	  missing=""; \
	  for p in $(DEBIAN_PACKAGES); do \
	    dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	  done; \
	  if [ -n "$$missing" ]; then \
	    echo "deps: installing$$missing"; \
	    $(SUDO) apt-get update && \
	    $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing; \
	  else \
	    echo "deps: $(DEBIAN_PACKAGES) already installed"; \
	  fi; \
	elif command -v pkg-config >/dev/null 2>&1 && pkg-config --exists libuv sqlite3 openssl; then \
	  echo "deps: libuv, sqlite3 and openssl found by pkg-config"; \
	else \
	  echo "deps: not a Debian system; install libuv, SQLite and OpenSSL 3 (with headers) yourself" >&2; \
	  exit 1; \
	fi

build: deps ## Build everything (debug)
	$(SWIFT) build

run: build ## Start the server on 127.0.0.1:1985, database ./data/outatime.sqlite
	$(SERVER_BIN) --host $(HOST) --port $(PORT) --db $(DB) $(ARGS)

# PyPI packages the tests use: a real Prometheus text parser for /metrics,
# and wcwidth, the reference for the terminal client's column widths.
PYTHON_TEST_PACKAGES := prometheus-client==0.21.1 wcwidth==0.7.0

test-deps: ## Install the Python packages the tests need (prometheus-client, wcwidth) if missing
	@python3 -c 'import prometheus_client, wcwidth' 2>/dev/null || python3 -m pip install --quiet $(PYTHON_TEST_PACKAGES)

test: deps test-deps ## Build and run every test
	$(SWIFT) build --build-tests
	$(SWIFT) test $(TEST_ARGS)
	$(MAKE) test-python

test-python: build ## Run the Python client's tests against the server
	python3 -m unittest discover -s clients/python/tests -v

crash-trials: build ## SIGKILL the server under load TRIALS times (default 10); checks no acknowledged event is lost
	python3 tools/crash_trials.py --server $(SERVER_BIN) --trials $(TRIALS) $(CRASH_ARGS)

release: deps ## Build an optimised server (.build/release/outatime-server)
	$(SWIFT) build -c release

fuzz: deps ## Build the libFuzzer targets (.build-fuzz) and run each FUZZ_SECONDS (60); crashes in .build-fuzz/out (docs/FUZZING.md)
	SWIFT=$(SWIFT) FUZZ_SECONDS=$(FUZZ_SECONDS) Fuzz/fuzz.sh

bench-peers: release ## Neutral-harness comparison with Redis/NATS (docs/BENCHMARKS.md; needs ../shared/bench)
	$(MAKE) -C ../shared/bench
	docs/bench/peers.sh

bench-commands: release ## Durable commands, 50 clients, interleaved with Redis appendfsync always (docs/BENCHMARKS.md)
	docs/bench/commands.sh

clean: ## Remove build products (keeps ./data)
	rm -rf .build .build-fuzz
