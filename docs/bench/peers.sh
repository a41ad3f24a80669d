#!/usr/bin/env bash
# Runs the neutral harness ../shared/bench/fanout against OutaTime and the
# peers installed here (Redis, NATS), interleaved, and prints the medians.
#
#   docs/bench/peers.sh [RESULTS_DIR]        (make bench-peers)
#
# Needs: .build/release/outatime-server (make release), ../shared/bench/fanout
# (make -C ../shared/bench), redis-server and/or nats-server (Debian
# packages). Scenarios, each run RUNS times (default 3) per server:
#   fanout   100 subscribers × 64 B, 50,000 messages: deliveries/s
#   latency  100 subscribers, 10,000 publishes/s (1 M deliveries/s) for 5 s: p99
#   idle     10,000 idle subscribed connections: server RSS per connection
# Every run gets a fresh server (and a fresh OutaTime database).
# SERVER=path picks the OutaTime binary; BASELINE=path adds a second OutaTime
# build (label `outatime-baseline`), interleaved, for before/after figures.
# BASELINE_ARGS: extra flags for it. None by default (builds as old as
# 6a3a241 have neither of the two limits below); a baseline that has them
# needs BASELINE_ARGS='--max-requests-per-second 0
# --max-connections-per-address 20000', or its own default request rate
# throttles the publisher and the idle scenario fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
BENCH=${BENCH:-../shared/bench}
OUT=${1:-/tmp/outatime-bench-$(date +%Y%m%d-%H%M%S)}
RUNS=${RUNS:-3}
SERVER=${SERVER:-.build/release/outatime-server}
BASELINE=${BASELINE:-}
mkdir -p "$OUT"
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"
for tool in "$SERVER" "$BENCH/fanout"; do
  [[ -x $tool ]] || { echo "missing $tool (make release; make -C $BENCH)" >&2; exit 64; }
done

run_outatime() {  # FILE fanout-args...
  # The publisher runs beyond the default --max-requests-per-second; the
  # baseline (older builds) has no such limit and no such flag.
  # The harness connects from one address: 10,000 idle connections need
  # more than the default 1,000 per address.
  LIMIT_ARGS="--max-requests-per-second 0 --max-connections-per-address 20000" run_build "$SERVER" outatime "$@"
}
run_baseline() {
  [[ -n $BASELINE ]] || return 0
  LIMIT_ARGS="${BASELINE_ARGS:-}" run_build "$BASELINE" outatime-baseline "$@"
}
run_build() {  # BINARY LABEL FILE fanout-args...
  local binary=$1 label=$2 file=$3; shift 3
  rm -f /tmp/outatime-bench.sqlite*
  # shellcheck disable=SC2086  # LIMIT_ARGS: words on purpose
  "$binary" --port 19000 --db /tmp/outatime-bench.sqlite --log-level warning ${LIMIT_ARGS:-} >/dev/null &
  local pid=$!; sleep 1
  "$BENCH/fanout" --proto lpjson --port 19000 --server-pid $pid --label "$label" \
    --lp-config "$BENCH/outatime.conf" --channel starport/bench "$@" 2>/dev/null | grep '^{' >> "$OUT/$file" || true
  kill -TERM $pid; wait $pid || true
}
run_redis() {
  command -v redis-server >/dev/null || return 0
  local file=$1; shift
  redis-server --port 16379 --bind 127.0.0.1 --save '' --appendonly no --maxclients 15000 >/dev/null &
  local pid=$!; sleep 1
  "$BENCH/fanout" --proto resp --port 16379 --server-pid $pid --label redis "$@" 2>/dev/null | grep '^{' >> "$OUT/$file" || true
  kill $pid; wait $pid || true
}
run_nats() {
  command -v nats-server >/dev/null || return 0
  local file=$1; shift
  nats-server -a 127.0.0.1 -p 14222 >/dev/null 2>&1 &
  local pid=$!; sleep 1
  "$BENCH/fanout" --proto nats --port 14222 --server-pid $pid --label nats "$@" 2>/dev/null | grep '^{' >> "$OUT/$file" || true
  kill $pid; wait $pid || true
}

for _ in $(seq "$RUNS"); do
  for server in outatime baseline redis nats; do
    echo "fanout $server" >&2
    run_$server fanout.jsonl --scenario fanout --subs 100 --msgs 50000 --size 64
  done
done
for _ in $(seq "$RUNS"); do
  for server in outatime baseline redis nats; do
    echo "latency $server" >&2
    run_$server latency.jsonl --scenario latency --subs 100 --rate 10000 --duration 5 --size 64
  done
done
for _ in $(seq "$RUNS"); do
  for server in outatime baseline redis nats; do
    echo "idle $server" >&2
    run_$server idle.jsonl --scenario idle --subs 10000
  done
done

python3 - "$OUT" <<'PY'
import json, statistics, sys, pathlib
out = pathlib.Path(sys.argv[1])
def rows(name):
    path = out / name
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
def per_label(name, key):
    result = {}
    for row in rows(name):
        if not row.get("ok", False):
            result.setdefault(row["label"], []).append(None)
        else:
            result.setdefault(row["label"], []).append(row[key])
    return result
def fmt(values, scale=1.0, digits=0):
    ok = [v for v in values if v is not None]
    runs = ", ".join("FAIL" if v is None else f"{v * scale:,.{digits}f}" for v in values)
    median = f"{statistics.median(ok) * scale:,.{digits}f}" if ok else "—"
    return median, runs
print(f"results in {out}\n")
print("| scenario | server | median | runs |")
print("|---|---|---|---|")
for name, key, label, scale, digits in [
    ("fanout.jsonl", "deliveries_per_s", "fan-out deliveries/s (100 subs × 64 B)", 1, 0),
    ("latency.jsonl", "lat_p99_us", "latency p99 at 1 M deliveries/s (ms)", 0.001, 2),
    ("idle.jsonl", None, "RSS per idle subscribed connection (bytes, 10,000)", 1, 0),
]:
    if key is None:
        data = {}
        for row in rows(name):
            value = (row["server_rss_after_kb"] - row["server_rss_before_kb"]) * 1024 / row["subs"] if row.get("ok") else None
            data.setdefault(row["label"], []).append(value)
    else:
        data = per_label(name, key)
    for server, values in data.items():
        median, runs = fmt(values, scale, digits)
        print(f"| {label} | {server} | {median} | {runs} |")
PY
