#!/usr/bin/env bash
# Runs the neutral harness ../shared/bench/fanout against OutaTime and the
# peers installed here (Redis, NATS, Mosquitto, and the syscall-only relay
# that is the ceiling), interleaved, and prints the medians and OutaTime's
# ratios to each.
#
#   docs/bench/peers.sh [RESULTS_DIR]        (make bench-peers)
#
# Needs: .build/release/outatime-server (make release), ../shared/bench/fanout
# and relay (make -C ../shared/bench), redis-server, nats-server and/or
# mosquitto (Debian packages; a peer that is missing is skipped). Scenarios,
# each run RUNS times (default 3) per server:
#   fanout   SUBS subscribers (default "100"; e.g. SUBS="10 100 1000 5000")
#            × 64 B, 50,000 messages at 100 (MSGS; unset: 5 M deliveries a
#            point, at least 1,000 messages): deliveries/s
#   latency  100 subscribers, 10,000 publishes/s (1 M deliveries/s) for 5 s: p99
#   idle     10,000 idle subscribed connections: server RSS per connection
# SCENARIOS picks some of them (default "fanout latency idle"); PEERS the
# servers (default "outatime baseline redis nats mosquitto relay").
# PIN=1 is a named placement: every server on CPU 0, the harness on CPU 1
# (taskset), so a server never shares its core with the harness.
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
SUBS=${SUBS:-100}
MSGS=${MSGS:-}
SCENARIOS=${SCENARIOS:-fanout latency idle}
SERVER_CPU=() HARNESS_CPU=()
if [[ ${PIN:-0} == 1 ]]; then SERVER_CPU=(taskset -c 0) HARNESS_CPU=(taskset -c 1); fi
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
  "${SERVER_CPU[@]}" "$binary" --port 19000 --db /tmp/outatime-bench.sqlite --log-level warning ${LIMIT_ARGS:-} >/dev/null &
  local pid=$!; sleep 1
  "${HARNESS_CPU[@]}" "$BENCH/fanout" --proto lpjson --port 19000 --server-pid $pid --label "$label" \
    --lp-config "$BENCH/outatime.conf" --channel starport/bench "$@" 2>/dev/null | grep '^{' >> "$OUT/$file" || true
  kill -TERM $pid; wait $pid || true
}
run_redis() {
  command -v redis-server >/dev/null || return 0
  local file=$1; shift
  "${SERVER_CPU[@]}" redis-server --port 16379 --bind 127.0.0.1 --save '' --appendonly no --maxclients 15000 >/dev/null &
  local pid=$!; sleep 1
  "${HARNESS_CPU[@]}" "$BENCH/fanout" --proto resp --port 16379 --server-pid $pid --label redis "$@" 2>/dev/null | grep '^{' >> "$OUT/$file" || true
  kill $pid; wait $pid || true
}
run_nats() {
  command -v nats-server >/dev/null || return 0
  local file=$1; shift
  "${SERVER_CPU[@]}" nats-server -a 127.0.0.1 -p 14222 >/dev/null 2>&1 &
  local pid=$!; sleep 1
  "${HARNESS_CPU[@]}" "$BENCH/fanout" --proto nats --port 14222 --server-pid $pid --label nats "$@" 2>/dev/null | grep '^{' >> "$OUT/$file" || true
  kill $pid; wait $pid || true
}
run_mosquitto() {
  command -v mosquitto >/dev/null || return 0
  local file=$1; shift
  # MQTT 3.1.1 QoS 0 (the harness's `mqtt`); as ../shared/bench/README.md runs it.
  printf 'listener 11883 127.0.0.1\nallow_anonymous true\nset_tcp_nodelay true\nmax_connections -1\n' > "$OUT/mosquitto.conf"
  "${SERVER_CPU[@]}" mosquitto -c "$OUT/mosquitto.conf" >/dev/null 2>&1 &
  local pid=$!; sleep 1
  "${HARNESS_CPU[@]}" "$BENCH/fanout" --proto mqtt --port 11883 --server-pid $pid --label mosquitto "$@" 2>/dev/null | grep '^{' >> "$OUT/$file" || true
  kill $pid; wait $pid || true
}
run_relay() {  # the ceiling: every byte read is written to every other connection, nothing else
  [[ -x $BENCH/relay ]] || return 0
  local file=$1; shift
  "${SERVER_CPU[@]}" "$BENCH/relay" 17000 >/dev/null 2>&1 &
  local pid=$!; sleep 1
  "${HARNESS_CPU[@]}" "$BENCH/fanout" --proto raw --port 17000 --server-pid $pid --label relay "$@" 2>/dev/null | grep '^{' >> "$OUT/$file" || true
  kill $pid; wait $pid || true
}
PEERS=${PEERS:-outatime baseline redis nats mosquitto relay}
wants() { [[ " $SCENARIOS " == *" $1 "* ]]; }

if wants fanout; then
  for _ in $(seq "$RUNS"); do
    for subs in $SUBS; do
      for server in $PEERS; do
        echo "fanout $subs $server" >&2
        msgs=${MSGS:-$(( 5000000 / subs > 1000 ? 5000000 / subs : 1000 ))}
        run_$server fanout.jsonl --scenario fanout --subs "$subs" --msgs "$msgs" --size 64
      done
    done
  done
fi
if wants latency; then
  for _ in $(seq "$RUNS"); do
    for server in $PEERS; do
      echo "latency $server" >&2
      run_$server latency.jsonl --scenario latency --subs 100 --rate 10000 --duration 5 --size 64
    done
  done
fi
if wants idle; then
  for _ in $(seq "$RUNS"); do
    for server in $PEERS; do
      [[ $server == relay ]] && continue  # the relay keeps no subscriptions
      echo "idle $server" >&2
      run_$server idle.jsonl --scenario idle --subs 10000
    done
  done
fi

python3 - "$OUT" <<'PY'
import json, statistics, sys, pathlib
out = pathlib.Path(sys.argv[1])
def rows(name):
    path = out / name
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
def per_label(name, key):
    result = {}
    for row in rows(name):
        label = row["label"] if name != "fanout.jsonl" else (row["subs"], row["label"])
        result.setdefault(label, []).append(row[key] if row.get("ok", False) else None)
    return result
def median(values):
    ok = [v for v in values if v is not None]
    return statistics.median(ok) if ok else None
def fmt(values, scale=1.0, digits=0):
    runs = ", ".join("FAIL" if v is None else f"{v * scale:,.{digits}f}" for v in values)
    m = median(values)
    return ("—" if m is None else f"{m * scale:,.{digits}f}"), runs
print(f"results in {out}\n")
print("| scenario | server | median | runs |")
print("|---|---|---|---|")
fanout = per_label("fanout.jsonl", "deliveries_per_s")
for (subs, server), values in sorted(fanout.items()):
    m, runs = fmt(values)
    print(f"| fan-out deliveries/s ({subs} subs × 64 B) | {server} | {m} | {runs} |")
for name, key, label, scale, digits in [
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
        m, runs = fmt(values, scale, digits)
        print(f"| {label} | {server} | {m} | {runs} |")
# OutaTime's fan-out against each peer, per subscriber count (medians).
ratios = []
for subs in sorted({s for s, _ in fanout}):
    ours = median(fanout.get((subs, "outatime"), []))
    for peer in ("outatime-baseline", "redis", "nats", "mosquitto", "relay"):
        theirs = median(fanout.get((subs, peer), []))
        if ours and theirs:
            ratios.append(f"| {subs} | outatime / {peer} | {ours / theirs:.2f} |")
if ratios:
    print("\n| subs | fan-out deliveries/s | ratio |\n|---|---|---|")
    print("\n".join(ratios))
PY
