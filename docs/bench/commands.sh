#!/usr/bin/env bash
# Durable commands against their peer, interleaved: Redis with
# `appendfsync always` under `redis-benchmark -c CLIENTS -P PIPELINE -t set`,
# then OutaTime under `outatime-load commands --clients CLIENTS --pipeline
# PIPELINE`, RUNS times (default 3), each on a fresh server and data folder.
# Prints one line per round with both figures.
#
#   docs/bench/commands.sh [RESULTS_DIR]                   (make bench-commands)
#   PIPELINE=100 CLIENTS=1 docs/bench/commands.sh          one connection, 100 in flight
#   PIPELINE=100 CLIENTS=1 make bench-commands             the same through make
#
# Environment: CLIENTS (default 50 connections), PIPELINE (default 1 command
# in flight per connection), RUNS (3), DURATION (10 s of OutaTime per round),
# REDIS_REQUESTS (SETs per redis-benchmark run; default 300000, or 1000000
# with a pipeline, so that a round lasts seconds, not a blink),
# SERVER_CPUS and HARNESS_CPUS (CPU lists for `taskset -c`: the servers,
# OutaTime's and redis-server, run on SERVER_CPUS and both harnesses on
# HARNESS_CPUS; unset, the kernel places every thread). Both peers always get
# the same placement. On the 2-core VM the placement alone moves the 50-client
# ratio from about 0.6 (unpinned) to about 1.0 (harnesses on CPU 1): see
# docs/BENCHMARKS.md, "CPU placement".
#
#   SERVER_CPUS=0 HARNESS_CPUS=1 make bench-commands   a core each
#
# Needs: .build/release/outatime-server and outatime-load (make release);
# redis-server and redis-benchmark (Debian package redis-server) for the
# peer, skipped when missing. The VM this project runs on changes speed
# during the day: compare OutaTime with the Redis figure of the same round.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-/tmp/outatime-commands-$(date +%Y%m%d-%H%M%S)}
RUNS=${RUNS:-3}
DURATION=${DURATION:-10}
CLIENTS=${CLIENTS:-50}
PIPELINE=${PIPELINE:-1}
if [[ $PIPELINE -gt 1 ]]; then REDIS_REQUESTS=${REDIS_REQUESTS:-1000000}; else REDIS_REQUESTS=${REDIS_REQUESTS:-300000}; fi
SERVER=.build/release/outatime-server
LOAD=.build/release/outatime-load
mkdir -p "$OUT"
for tool in "$SERVER" "$LOAD"; do
  [[ -x $tool ]] || { echo "missing $tool (make release)" >&2; exit 64; }
done
SERVER_CPUS=${SERVER_CPUS:-}
HARNESS_CPUS=${HARNESS_CPUS:-}
echo "durable commands: $CLIENTS clients, $PIPELINE in flight each; $RUNS rounds; results in $OUT"
echo "placement: servers on CPUs ${SERVER_CPUS:-any}, harnesses on CPUs ${HARNESS_CPUS:-any}"
# Command prefixes: `taskset -c CPUS` (which then execs the command, so `$!`
# stays the server's pid), or nothing.
on_server_cpus=()
on_harness_cpus=()
if [[ -n $SERVER_CPUS ]]; then on_server_cpus=(taskset -c "$SERVER_CPUS"); fi
if [[ -n $HARNESS_CPUS ]]; then on_harness_cpus=(taskset -c "$HARNESS_CPUS"); fi

redis_round() {  # prints the SET/s of one redis-benchmark run, or "-"
  if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
    echo "-"
    return
  fi
  local dir=$OUT/redis-aof
  rm -rf "$dir"
  mkdir -p "$dir"
  "${on_server_cpus[@]}" redis-server --port 16380 --bind 127.0.0.1 --save '' --appendonly yes --appendfsync always \
    --dir "$dir" >/dev/null &
  local pid=$!
  sleep 1.5
  "${on_harness_cpus[@]}" redis-benchmark -p 16380 -c "$CLIENTS" -P "$PIPELINE" -n "$REDIS_REQUESTS" -t set -q 2>/dev/null | tr '\r' '\n' \
    | awk '/requests per second/ { print $2 }' | tail -1
  kill -TERM $pid
  wait $pid || true
}

outatime_round() {  # FILE: one outatime-load commands run on a fresh server
  rm -f "$OUT/commands.sqlite"*
  # No request-rate limit: one pipelining connection runs far beyond the
  # default --max-requests-per-second, and the figure is the server's speed.
  "${on_server_cpus[@]}" "$SERVER" --port 19001 --db "$OUT/commands.sqlite" --log-level warning --max-requests-per-second 0 >/dev/null &
  local pid=$!
  sleep 1
  "${on_harness_cpus[@]}" "$LOAD" commands --port 19001 --clients "$CLIENTS" --pipeline "$PIPELINE" --duration "$DURATION" --json \
    2>/dev/null > "$1" || true
  kill -TERM $pid
  wait $pid || true
}

for round in $(seq "$RUNS"); do
  redis=$(redis_round)
  outatime_round "$OUT/commands-$round.json"
  python3 - "$OUT/commands-$round.json" "$redis" <<'PY'
import json, sys, time
try:
    result = json.load(open(sys.argv[1]))
except ValueError:
    print(f"{time.strftime('%H:%M:%S')}  outatime: no result (see {sys.argv[1]})  |  "
          f"redis appendfsync always {sys.argv[2]} SET/s")
    sys.exit(0)
latency = result["latency"]
ms = lambda key: f"{latency[key] / 1000:.1f} ms"
cpu = result.get("harness_cpu", {})
share = cpu.get("busiest_loop_share")
harness = f"harness loop {share * 100:.0f} %  " if share is not None else ""
print(f"{time.strftime('%H:%M:%S')}  c{result['clients']} P{result.get('pipeline', 1)}  "
      f"outatime {result['commands_per_s']:,}/s  "
      f"p50 {ms('p50_us')}  p99 {ms('p99_us')}  p99.9 {ms('p99_9_us')}  max {ms('max_us')}  "
      f"{result.get('events_per_batch', '?')} events/commit  errors {result['errors']}  {harness}|  "
      f"redis appendfsync always {sys.argv[2]} SET/s")
PY
done
echo "results in $OUT"
