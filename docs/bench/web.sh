#!/usr/bin/env bash
# WebSocket against TCP fan-out on the same server, interleaved (issue 28,
# "Must reach": WebSocket deliveries/s ≥ 0.85 × TCP and p99 ≤ 1.5 × TCP,
# 1,000 subscribers × 64 B, same run). One release server with the HTTP
# listener; ROUNDS rounds, each a TCP and a WebSocket `outatime-load fanout`
# (the order alternates round by round: tcp ws, ws tcp, …), so a machine
# that speeds up or slows down during the run weighs on both alike. Every
# connection of a WebSocket run (subscribers and publisher) upgrades `/ws`.
#
#   docs/bench/web.sh [RESULTS_DIR]                        (make bench-web)
#   ROUNDS=3 MESSAGES=20000 make bench-web
#
# Two measurements per round and transport:
#   throughput  --messages MESSAGES as fast as the window allows: deliveries/s;
#   latency     --rate RATE publishes/s (RATE × SUBSCRIBERS deliveries/s, below
#               both transports' ceilings): p99 send → receive. Unpaced p99 is
#               only the window's queueing, so the p99 compared is the paced one.
# Prints each round, then the medians and the ratios ws/tcp.
#
# Environment: SUBSCRIBERS (1000), SIZE (64 B), MESSAGES (30000 per throughput
# run), RATE (200 publishes/s), LATENCY_SECONDS (10 per latency run), ROUNDS
# (5), LOOPS (harness event loops, 2), TICK_BACKLOG (the server's
# --tick-backlog-bytes, 1 MiB: see below), BUILD (where the binaries are,
# .build/release), SERVER_CPUS and HARNESS_CPUS (CPU lists
# for `taskset -c`, as docs/bench/commands.sh; unset, the kernel places every
# thread). Needs .build/release/outatime-server and outatime-load (make
# release) and python3.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-/tmp/outatime-web-$(date +%Y%m%d-%H%M%S)}
SUBSCRIBERS=${SUBSCRIBERS:-1000}
SIZE=${SIZE:-64}
MESSAGES=${MESSAGES:-30000}
RATE=${RATE:-200}
LATENCY_SECONDS=${LATENCY_SECONDS:-10}
ROUNDS=${ROUNDS:-5}
LOOPS=${LOOPS:-2}
# A subscriber may fall --window (1,000) messages of ~140 B behind: past the
# default 64 KiB backlog the server drops `message` pushes to it (PROTOCOL.md
# §12), which the harness counts as lost and the run fails. 1 MiB holds the window.
TICK_BACKLOG=${TICK_BACKLOG:-1048576}
BUILD=${BUILD:-.build/release}
SERVER=$BUILD/outatime-server
LOAD=$BUILD/outatime-load
for tool in "$SERVER" "$LOAD"; do
  [[ -x $tool ]] || { echo "missing $tool (make release)" >&2; exit 64; }
done
on_server_cpus=()
on_harness_cpus=()
if [[ -n ${SERVER_CPUS:-} ]]; then on_server_cpus=(taskset -c "$SERVER_CPUS"); fi
if [[ -n ${HARNESS_CPUS:-} ]]; then on_harness_cpus=(taskset -c "$HARNESS_CPUS"); fi
mkdir -p "$OUT"
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

# One server for the whole run: both transports meet the same process, the
# same database and the same warm caches.
connections=$((4 * SUBSCRIBERS + 100))
"${on_server_cpus[@]}" "$SERVER" --port 0 --http 0 --db "$OUT/bench.sqlite" --log-level warning \
  --max-connections-per-address "$connections" --http-max-connections-per-address "$connections" \
  --max-requests-per-second 0 --tick-backlog-bytes "$TICK_BACKLOG" >"$OUT/server.out" 2>"$OUT/server.err" &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  grep -q '^http listening on' "$OUT/server.out" 2>/dev/null && break
  sleep 0.1
done
tcp_port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$OUT/server.out" | head -n 1)
http_port=$(sed -n 's/^http listening on .*:\([0-9]*\)$/\1/p' "$OUT/server.out" | head -n 1)
[[ -n $tcp_port && -n $http_port ]] || { echo "the server did not start:" >&2; cat "$OUT/server.err" >&2; exit 1; }
echo "web fan-out: $SUBSCRIBERS subscribers × $SIZE B; throughput $MESSAGES messages, latency at $RATE publishes/s for ${LATENCY_SECONDS}s; $ROUNDS rounds; results in $OUT"
echo "server: tcp port $tcp_port, http port $http_port (/ws)"

run() {  # TRANSPORT KIND ROUND: writes $OUT/<kind>-<transport>-<round>.json
  local transport=$1 kind=$2 round=$3 port=$tcp_port
  [[ $transport == ws ]] && port=$http_port
  local args=(fanout --transport "$transport" --port "$port" --subscribers "$SUBSCRIBERS" --size "$SIZE"
              --loops "$LOOPS" --stall-timeout 30 --json)
  if [[ $kind == throughput ]]; then
    args+=(--messages "$MESSAGES" --duration 120)
  else
    args+=(--messages $((RATE * LATENCY_SECONDS)) --rate "$RATE" --duration $((LATENCY_SECONDS * 3)))
  fi
  "${on_harness_cpus[@]}" "$LOAD" "${args[@]}" >"$OUT/$kind-$transport-$round.json" 2>"$OUT/$kind-$transport-$round.err" \
    || echo "  ($kind $transport round $round failed: see $OUT/$kind-$transport-$round.err)" >&2
}

for round in $(seq "$ROUNDS"); do
  if (( round % 2 )); then order=(tcp ws); else order=(ws tcp); fi
  for transport in "${order[@]}"; do run "$transport" throughput "$round"; done
  for transport in "${order[@]}"; do run "$transport" latency "$round"; done
  python3 - "$OUT" "$round" <<'PY'
import json, sys
out, rnd = sys.argv[1], sys.argv[2]
def load(kind, transport):
    try:
        with open(f"{out}/{kind}-{transport}-{rnd}.json") as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}
cells = []
for transport in ("tcp", "ws"):
    t, l = load("throughput", transport), load("latency", transport)
    ok = t.get("ok") and l.get("ok")
    cells.append(f"{transport} {t.get('deliveries_per_s', 0):>9,} deliveries/s  p99 {l.get('latency', {}).get('p99_us', 0) / 1000:7.3f} ms"
                 + ("" if ok else "  (NOT OK)"))
print(f"round {rnd}: " + "   ".join(cells))
PY
done

python3 - "$OUT" "$ROUNDS" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def values(kind, transport, pick):
    found = []
    for rnd in range(1, rounds + 1):
        try:
            with open(f"{out}/{kind}-{transport}-{rnd}.json") as f:
                data = json.load(f)
        except (OSError, ValueError):
            continue
        if data.get("ok"):
            found.append(pick(data))
    return found
rate = {t: values("throughput", t, lambda d: d["deliveries_per_s"]) for t in ("tcp", "ws")}
p99 = {t: values("latency", t, lambda d: d["latency"]["p99_us"] / 1000) for t in ("tcp", "ws")}
if not all(rate.values()) or not all(p99.values()):
    print("no complete round for one of the transports: see the .err files")
    sys.exit(1)
median = lambda xs: statistics.median(xs)
r_tcp, r_ws = median(rate["tcp"]), median(rate["ws"])
l_tcp, l_ws = median(p99["tcp"]), median(p99["ws"])
print(f"median deliveries/s: tcp {r_tcp:,.0f}  ws {r_ws:,.0f}  ws/tcp {r_ws / r_tcp:.2f}  (must reach ≥ 0.85)")
print(f"median p99 at the paced rate: tcp {l_tcp:.3f} ms  ws {l_ws:.3f} ms  ws/tcp {l_ws / l_tcp:.2f}  (must reach ≤ 1.5)")
print(f"rounds counted: throughput tcp {len(rate['tcp'])}, ws {len(rate['ws'])}; latency tcp {len(p99['tcp'])}, ws {len(p99['ws'])}")
PY
