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

# CPU each server thread has used so far: one line per thread, "TID NAME
# TICKS" (user + system time in clock ticks). The fields after "pid (name) "
# are state first, then utime 12th and stime 13th (proc(5)).
thread_ticks() {  # PID
  local task
  for task in /proc/"$1"/task/*; do
    [[ -r $task/stat ]] || continue
    printf '%s %s %s\n' "${task##*/}" "$(tr ' ' '_' < "$task/comm")" \
      "$(sed 's/^.*) //' "$task/stat" | awk '{ print $12 + $13 }')"
  done 2>/dev/null || true
}

redis_round() {  # prints "SET/s CPU-TICKS" of one redis-benchmark run (the server's CPU during it), or "- -"
  if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
    echo "- -"
    return
  fi
  local dir=$OUT/redis-aof
  rm -rf "$dir"
  mkdir -p "$dir"
  "${on_server_cpus[@]}" redis-server --port 16380 --bind 127.0.0.1 --save '' --appendonly yes --appendfsync always \
    --dir "$dir" >/dev/null &
  local pid=$!
  sleep 1.5
  local before after rate
  before=$(thread_ticks $pid | awk '{ s += $3 } END { print s + 0 }')
  rate=$("${on_harness_cpus[@]}" redis-benchmark -p 16380 -c "$CLIENTS" -P "$PIPELINE" -n "$REDIS_REQUESTS" -t set -q \
    2>/dev/null | tr '\r' '\n' | awk '/requests per second/ { print $2 }' | tail -1)
  after=$(thread_ticks $pid | awk '{ s += $3 } END { print s + 0 }')
  echo "${rate:--} $((after - before))"
  kill -TERM $pid
  wait $pid || true
}

outatime_round() {  # FILE: one outatime-load commands run on a fresh server; its server's thread CPU in FILE.cpu-before/-after
  rm -f "$OUT/commands.sqlite"*
  # No request-rate limit: one pipelining connection runs far beyond the
  # default --max-requests-per-second, and the figure is the server's speed.
  "${on_server_cpus[@]}" "$SERVER" --port 19001 --db "$OUT/commands.sqlite" --log-level warning --max-requests-per-second 0 >/dev/null &
  local pid=$!
  sleep 1
  thread_ticks $pid > "$1.cpu-before"
  "${on_harness_cpus[@]}" "$LOAD" commands --port 19001 --clients "$CLIENTS" --pipeline "$PIPELINE" --duration "$DURATION" --json \
    2>/dev/null > "$1" || true
  thread_ticks $pid > "$1.cpu-after"
  echo "$pid" > "$1.pid"
  kill -TERM $pid
  wait $pid || true
}

for round in $(seq "$RUNS"); do
  read -r redis redis_ticks <<< "$(redis_round)"
  outatime_round "$OUT/commands-$round.json"
  python3 - "$OUT/commands-$round.json" "$redis" "$redis_ticks" "$REDIS_REQUESTS" "$(getconf CLK_TCK)" <<'PY'
import json, sys, time
path, redis, redis_ticks, redis_requests, hz = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
# Server CPU per command, which depends less on the VM's speed of the
# minute than the rate does: Redis's over its whole redis-benchmark run,
# OutaTime's per thread over its whole outatime-load run (the loop is the
# main thread; the store writer's thread is named outatime-writer).
redis_cpu = ""
if redis_ticks.isdigit() and redis != "-":
    redis_cpu = f", server CPU {int(redis_ticks) / hz * 1e6 / redis_requests:.1f} µs a SET"
try:
    result = json.load(open(path))
except ValueError:
    print(f"{time.strftime('%H:%M:%S')}  outatime: no result (see {path})  |  "
          f"redis appendfsync always {redis} SET/s{redis_cpu}")
    sys.exit(0)
def ticks(name):
    rows = [line.split() for line in open(f"{path}.{name}") if line.strip()]
    return {tid: (comm, int(count)) for tid, comm, count in rows}
before, after, pid = ticks("cpu-before"), ticks("cpu-after"), open(f"{path}.pid").read().strip()
used = {"loop": 0, "writer": 0, "other": 0}
for tid, (comm, count) in after.items():
    part = "loop" if tid == pid else "writer" if comm == "outatime-writer" else "other"
    used[part] += count - before.get(tid, (comm, 0))[1]
acknowledged = max(1, result.get("acknowledged", 0))
per = {part: count / hz * 1e6 / acknowledged for part, count in used.items()}
server_cpu = (f"server CPU {sum(per.values()):.1f} µs a command "
              f"(loop {per['loop']:.1f}, writer {per['writer']:.1f}, other {per['other']:.1f})  ")
latency = result["latency"]
ms = lambda key: f"{latency[key] / 1000:.1f} ms"
cpu = result.get("harness_cpu", {})
share = cpu.get("busiest_loop_share")
harness = f"harness loop {share * 100:.0f} %  " if share is not None else ""
print(f"{time.strftime('%H:%M:%S')}  c{result['clients']} P{result.get('pipeline', 1)}  "
      f"outatime {result['commands_per_s']:,}/s  "
      f"p50 {ms('p50_us')}  p99 {ms('p99_us')}  p99.9 {ms('p99_9_us')}  max {ms('max_us')}  "
      f"{result.get('events_per_batch', '?')} events/commit  errors {result['errors']}  {server_cpu}{harness}|  "
      f"redis appendfsync always {redis} SET/s{redis_cpu}")
PY
done
echo "results in $OUT"
