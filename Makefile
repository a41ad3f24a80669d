# OutaTime — build, run and test.
#
#   make run     start the server on 127.0.0.1:1985, database under ./data
#   make test    run every test
#   make help    list all targets
#
# Variables: SWIFT (the swift driver), ARGS (extra server flags for `run`),
# HOST, PORT, DB (where `run` listens and stores), TEST_ARGS (for `swift test`),
# TRIALS and CRASH_ARGS (for `crash-trials`), CLUSTER_ARGS (for `cluster-local`),
# CLUSTER_TRIALS_ARGS (for `cluster-trials`), WAN_ARGS (for `wan-trials`), FUZZ_SECONDS (per fuzz target, for `fuzz`),
# PREFIX, DESTDIR and CONFIG (for `install`; the install directories below).

SWIFT     ?= swift
ARGS      ?=
HOST      ?= 127.0.0.1
PORT      ?= 1985
DB        ?= ./data/outatime.sqlite
TEST_ARGS ?=
TRIALS    ?= 10
CRASH_ARGS ?=
CLUSTER_TRIALS_ARGS ?=
WAN_ARGS ?=
FUZZ_SECONDS ?= 60

# `make install`: where the files go (GNU names; each may be overridden).
# DESTDIR is prepended to every path but not written into the files (the
# unit's ExecStart names $(BINDIR)), for packaging and staged installs.
# CONFIG=debug installs the debug build (the install test uses it so it does
# not build everything again in release).
PREFIX  ?= /usr/local
DESTDIR ?=
CONFIG  ?= release
BINDIR  ?= $(PREFIX)/bin
MANDIR  ?= $(PREFIX)/share/man
DATADIR ?= $(PREFIX)/share/outatime
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR  ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
# The man pages' date: the last commit's (the same pages for the same
# source), today's outside a git checkout.
MAN_DATE ?= $(shell git log -1 --format=%cs 2>/dev/null || date -u +%Y-%m-%d)

# Debian packages the build needs: libuv for the event loop, SQLite for GRDB,
# OpenSSL 3 for TLS (and the openssl command, which the TLS tests use),
# libnats for cluster mode (NATS JetStream), haproxy for the tests that put
# a balancer in front of the server.
# chromium for the browser tests of the board (`make test-web`).
DEBIAN_PACKAGES := libuv1-dev libsqlite3-dev libssl-dev openssl libnats-dev haproxy chromium

# Root installs directly; anyone else goes through sudo when it exists.
SUDO := $(shell if [ "$$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then echo sudo; fi)

SERVER_BIN := .build/debug/outatime-server
# The executables `install` installs, each with a man page and completions.
TOOLS := outatime-server outatime outatime-load
# Where `man` leaves the pages (copied from the plugin's output).
MAN_OUT := .build/man

.DEFAULT_GOAL := help

.PHONY: help deps test-deps build run test test-python test-web test-install test-cluster crash-trials cluster-local cluster-trials wan-trials wan-quick release man install install-files uninstall fuzz bench-peers bench-commands bench-web clean

help: ## List the targets
	@echo "OutaTime — make targets:"
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-15s %s\n", $$1, $$2}'
	@echo
	@echo "Variables: SWIFT=$(SWIFT) HOST=$(HOST) PORT=$(PORT) DB=$(DB)"
	@echo "           ARGS='extra server flags', e.g. make run ARGS='--log-level debug'"
	@echo "           PREFIX=$(PREFIX) DESTDIR=$(DESTDIR) CONFIG=$(CONFIG) for install, e.g. sudo make install PREFIX=/opt/outatime"

deps: ## Install the Debian packages libuv1-dev, libsqlite3-dev, libssl-dev, openssl, libnats-dev, haproxy and chromium if missing
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
	elif command -v pkg-config >/dev/null 2>&1 && pkg-config --exists libuv sqlite3 openssl libnats; then \
	  echo "deps: libuv, sqlite3, openssl and libnats found by pkg-config"; \
	else \
	  echo "deps: not a Debian system; install libuv, SQLite, OpenSSL 3 and libnats 3.4 (with headers) yourself" >&2; \
	  exit 1; \
	fi

build: deps ## Build everything (debug)
	$(SWIFT) build

run: build ## Start the server on 127.0.0.1:1985, database ./data/outatime.sqlite
	$(SERVER_BIN) --host $(HOST) --port $(PORT) --db $(DB) $(ARGS)

# PyPI packages the tests use: a real Prometheus text parser for /metrics,
# and wcwidth, the reference for the terminal client's column widths.
PYTHON_TEST_PACKAGES := prometheus-client==0.21.1 wcwidth==0.7.0

# Debian's nats-server 2.9.10, which cluster mode refuses (nats-server#4320),
# unpacked under .build for the test that checks the refusal.
OLD_NATS_VERSION := 2.9.10-1+b3
OLD_NATS_DIR := .build/nats-2.9.10
OLD_NATS_SERVER := $(OLD_NATS_DIR)/usr/sbin/nats-server

test-deps: ## Install what the tests need if missing: prometheus-client, wcwidth, nats-server 2.15.1, websockets and playwright (pip), Debian's nats-server 2.9.10 (unpacked under .build)
	@python3 -c 'import prometheus_client, wcwidth' 2>/dev/null || python3 -m pip install --quiet $(PYTHON_TEST_PACKAGES)
	@nats-server --version 2>/dev/null | grep -q 'v2.15.1' || python3 -m pip install --quiet --require-hashes -r tools/requirements-nats.txt
	@python3 -c 'import playwright.sync_api, websockets' 2>/dev/null || python3 -m pip install --quiet --require-hashes -r tools/requirements-web.txt
	@# Debian 12's nats-server 2.9.10, unpacked (not installed): cluster mode must refuse it (a test checks).
	@[ -x $(OLD_NATS_SERVER) ] || { dir=$$(mktemp -d) && (cd $$dir && { apt-get download -q nats-server=$(OLD_NATS_VERSION) \
	  || { $(SUDO) apt-get update -q && apt-get download -q nats-server=$(OLD_NATS_VERSION); }; }) \
	  && mkdir -p $(OLD_NATS_DIR) && dpkg -x $$dir/nats-server_*.deb $(OLD_NATS_DIR) && rm -rf $$dir; }

test: deps test-deps ## Build and run every test
	$(SWIFT) build --build-tests
	$(SWIFT) test $(TEST_ARGS)
	$(MAKE) test-python
	$(MAKE) test-web
	$(MAKE) test-install
	$(MAKE) test-cluster
	$(MAKE) wan-quick

test-python: build ## Run the Python client's tests against the server, over TCP, then over WebSocket (/ws, needs websockets)
	OUTATIME_TRANSPORT=tcp python3 -m unittest discover -s clients/python/tests -v
	OUTATIME_TRANSPORT=ws python3 -m unittest discover -s clients/python/tests -v

# Outside `swift test`: `make install` runs SwiftPM, which waits for the
# build directory that a running `swift test` holds.
test-install: ## Check `make install CONFIG=debug` into a temporary PREFIX (and DESTDIR), then `make uninstall`
	python3 -m unittest discover -s tools/tests -p 'test_install.py' -v

test-cluster: build test-deps ## Check `make cluster-local` end to end: 3 nats-servers (R3), the node, haproxy with PROXY, one client through it
	python3 -m unittest discover -s tools/tests -p 'test_cluster_local.py' -v

# Where `test-web` leaves its screenshots (one per kind) and latency figures.
WEB_ARTIFACTS ?= .build/web-artifacts

test-web: build test-deps ## The board in headless Chromium (Playwright) against the server; screenshots in .build/web-artifacts
	OUTATIME_WEB_ARTIFACTS=$(WEB_ARTIFACTS) timeout --foreground -k 10 300 python3 -m unittest discover -s clients/web/tests -v

crash-trials: build ## SIGKILL the server under load TRIALS times (default 10); checks no acknowledged event is lost
	python3 tools/crash_trials.py --server $(SERVER_BIN) --trials $(TRIALS) $(CRASH_ARGS)

cluster-local: build test-deps ## Cluster mode on this machine: 3 nats-servers, one node, haproxy on 127.0.0.1:7400, until Ctrl-C (tools/cluster_local.py)
	python3 tools/cluster_local.py --server $(SERVER_BIN) $(CLUSTER_ARGS)

# Not part of `make test`: about 5-10 minutes, and the link cut needs root
# (a network namespace; without it that part is skipped, saying so).
cluster-trials: deps test-deps ## Failover trials on a local cluster (3 nats-servers, 3 nodes, haproxy): 20 SIGKILLs of a channel's owner, a freeze, a link cut, host loss; figures for docs/CLUSTER.md
	$(SWIFT) build -c release --product outatime-server
	python3 tools/cluster_trials.py --server .build/release/outatime-server $(CLUSTER_TRIALS_ARGS)

# Not part of `make test`: about 15 minutes (--quick: about 7), needs root
# (network namespaces); without them it says so and exits 2.
wan-trials: deps ## WAN trials (issue 27): namespaces, an emulated link (delay, loss, cuts, 1 Mbit), the issue's scenarios, PASS/FAIL; WAN_ARGS='--quick'
	$(SWIFT) build -c release --product outatime-server
	$(SWIFT) build -c release --product outatime
	timeout --foreground -k 30 3000 python3 tools/wan_trials.py $(WAN_ARGS)

# The short version (one profile, one blackhole; about a minute, root):
# asserts what holds once issue 27's liveness and recovery work is in.
wan-quick: build ## Short WAN check (80 ms RTT and 1 % loss, a 15 s blackhole) on the debug build; needs root
	python3 -m unittest discover -s tools/tests -p 'test_wan_quick.py' -v

# Not part of `make test`: about a minute (issue 28, scope point 8; figures for
# docs/BENCHMARKS.md). FLOOD_ARGS: e.g. '--connections 5000 --server .build/debug/outatime-server'.
FLOOD_ARGS ?=
.PHONY: flood-trial
flood-trial: deps ## 20,000 silent connections at once from 127.0.0.1 over its limit of 1,000 while a client on 127.0.0.2 pings: refusal times, ping p50/p99, PASS/FAIL
	$(SWIFT) build -c release --product outatime-server
	python3 tools/flood_trial.py --server .build/release/outatime-server $(FLOOD_ARGS)

release: deps ## Build an optimised server (.build/release/outatime-server)
	$(SWIFT) build -c release

fuzz: deps ## Build the libFuzzer targets (.build-fuzz) and run each FUZZ_SECONDS (60); crashes in .build-fuzz/out (docs/FUZZING.md)
	SWIFT=$(SWIFT) FUZZ_SECONDS=$(FUZZ_SECONDS) Fuzz/fuzz.sh

bench-peers: release ## Neutral-harness comparison with Redis, NATS, Mosquitto and the relay ceiling (docs/BENCHMARKS.md; needs ../shared/bench; RUNS, SUBS, PIN=1, BASELINE=)
	$(MAKE) -C ../shared/bench
	docs/bench/peers.sh

bench-web: release ## WebSocket vs TCP fan-out, same server, interleaved rounds: deliveries/s, p99, ws/tcp ratios (SUBSCRIBERS=1000 SIZE=64 MESSAGES ROUNDS=5 RATE; docs/bench/web.sh)
	docs/bench/web.sh

bench-commands: release ## Durable commands, 50 clients, interleaved with Redis appendfsync always (docs/BENCHMARKS.md)
	docs/bench/commands.sh

man: deps ## Generate the man pages with swift-argument-parser's generate-manual plugin (.build/man)
	$(SWIFT) build -c $(CONFIG)
	$(SWIFT) package plugin generate-manual --configuration $(CONFIG) --date $(MAN_DATE)
	@mkdir -p $(MAN_OUT)
	@# The plugin writes the discussions' blank lines as they are; mdoc wants
	@# .Pp between paragraphs (groff warns "Empty input line" otherwise).
	@for tool in $(TOOLS); do \
	  page=$$(find .build/plugins/GenerateManual/outputs -name "$$tool.1" | head -n 1); \
	  if [ -z "$$page" ]; then echo "man: the plugin made no page for $$tool" >&2; exit 1; fi; \
	  sed 's/^$$/.Pp/' "$$page" > $(MAN_OUT)/$$tool.1; \
	done
	@echo "man pages in $(MAN_OUT): $(TOOLS:%=%.1)"

install: man ## Build (CONFIG=release) and install binaries, man pages, completions and the systemd unit under PREFIX (/usr/local)
	$(MAKE) install-files

install-files: ## Install what `make man` built, without building (e.g. `make man`, then `sudo make install-files`)
	@bin=.build/$(CONFIG); \
	for file in $(TOOLS:%=$$bin/%) $(TOOLS:%=$(MAN_OUT)/%.1); do \
	  if [ ! -f "$$file" ]; then echo "install-files: no $$file: run 'make man CONFIG=$(CONFIG)' (or 'make install') first" >&2; exit 1; fi; \
	done; \
	set -e; \
	install -d "$(DESTDIR)$(BINDIR)" "$(DESTDIR)$(MANDIR)/man1" "$(DESTDIR)$(BASHCOMPDIR)" \
	  "$(DESTDIR)$(ZSHCOMPDIR)" "$(DESTDIR)$(FISHCOMPDIR)" "$(DESTDIR)$(DATADIR)" \
	  "$(DESTDIR)$(SYSTEMDUNITDIR)" "$(DESTDIR)$(SYSUSERSDIR)"; \
	for tool in $(TOOLS); do \
	  install -m 0755 "$$bin/$$tool" "$(DESTDIR)$(BINDIR)/$$tool"; \
	  install -m 0644 "$(MAN_OUT)/$$tool.1" "$(DESTDIR)$(MANDIR)/man1/$$tool.1"; \
	  "$$bin/$$tool" --generate-completion-script bash > "$(DESTDIR)$(BASHCOMPDIR)/$$tool"; \
	  "$$bin/$$tool" --generate-completion-script zsh > "$(DESTDIR)$(ZSHCOMPDIR)/_$$tool"; \
	  "$$bin/$$tool" --generate-completion-script fish > "$(DESTDIR)$(FISHCOMPDIR)/$$tool.fish"; \
	done; \
	sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@DATADIR@|$(DATADIR)|g' dist/systemd/outatime-server.service.in \
	  > "$(DESTDIR)$(SYSTEMDUNITDIR)/outatime-server.service"; \
	chmod 0644 "$(DESTDIR)$(SYSTEMDUNITDIR)/outatime-server.service"; \
	install -m 0644 dist/systemd/outatime.sysusers "$(DESTDIR)$(SYSUSERSDIR)/outatime.conf"; \
	install -m 0644 dist/outatime-server.env dist/tokens.example.json "$(DESTDIR)$(DATADIR)/"; \
	echo "installed $(TOOLS) ($(CONFIG)) under $(DESTDIR)$(PREFIX); the service: README.md, \"Install\""

uninstall: ## Remove what `make install` installed under PREFIX (same PREFIX, DESTDIR and directories)
	rm -f $(foreach tool,$(TOOLS),"$(DESTDIR)$(BINDIR)/$(tool)" "$(DESTDIR)$(MANDIR)/man1/$(tool).1" \
	  "$(DESTDIR)$(BASHCOMPDIR)/$(tool)" "$(DESTDIR)$(ZSHCOMPDIR)/_$(tool)" "$(DESTDIR)$(FISHCOMPDIR)/$(tool).fish")
	rm -f "$(DESTDIR)$(SYSTEMDUNITDIR)/outatime-server.service" "$(DESTDIR)$(SYSUSERSDIR)/outatime.conf" \
	  "$(DESTDIR)$(DATADIR)/outatime-server.env" "$(DESTDIR)$(DATADIR)/tokens.example.json"
	-rmdir "$(DESTDIR)$(DATADIR)" 2>/dev/null

clean: ## Remove build products (keeps ./data)
	rm -rf .build .build-fuzz
