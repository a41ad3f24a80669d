#!/usr/bin/env bash
# TLS costs (issue 13), OutaTime and Redis side by side, interleaved rounds:
#   1. server CPU per connection, N sequential connects, plain vs TLS (full
#      TLS 1.3 handshakes with an EC P-256 certificate, no resumption);
#   2. server RSS per idle subscribed connection, plain vs TLS (fresh server
#      each round);
#   3. OutaTime fan-out deliveries/s and server CPU per delivery,
#      100 subscribers x 64 B, plain vs TLS.
# Usage: docs/bench/tls.sh [OUT_DIR]   (from the repository root, after
# `swift build -c release --scratch-path .build-release`; needs openssl,
# python3, redis-server). Prints one JSON line per run into OUT_DIR/*.jsonl.
set -euo pipefail
BIN=${BIN:-.build-release/release}
OUT=${1:-/tmp/outatime-tls-bench}
N=${N:-2000}
ROUNDS=${ROUNDS:-3}
MESSAGES=${MESSAGES:-50000}  # fan-out messages per run (x 100 subscribers)
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT" "$OUT/pki"
ulimit -n 20000
cd "$OUT/pki"
if [ ! -f server.pem ]; then
  openssl ecparam -name prime256v1 -genkey -noout -out ca.key
  openssl req -x509 -new -key ca.key -subj "/CN=Bench CA" -days 2 \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign -out ca.pem
  openssl ecparam -name prime256v1 -genkey -noout -out server.key
  openssl req -new -key server.key -subj "/CN=localhost" -out server.csr
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > server.ext
  openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile server.ext -out server.pem
fi
cd - >/dev/null
PKI=$OUT/pki

outatime_start() {  # fresh database; plain 19100, TLS 19101
  rm -f "$OUT"/bench.sqlite*
  "$BIN/outatime-server" --port 19100 --tls-port 19101 --tls-cert "$PKI/server.pem" --tls-key "$PKI/server.key" \
    --db "$OUT/bench.sqlite" --log-level warning --max-requests-per-second 0 &
  SERVER=$!
  sleep 1.5
}
redis_start() {  # plain 16390, TLS 16391; no persistence, no client certificates
  redis-server --port 16390 --tls-port 16391 --bind 127.0.0.1 --save '' --appendonly no --maxclients 15000 \
    --tls-cert-file "$PKI/server.pem" --tls-key-file "$PKI/server.key" --tls-ca-cert-file "$PKI/ca.pem" \
    --tls-auth-clients no --tls-session-caching no --daemonize no --logfile "$OUT/redis.log" &
  SERVER=$!
  sleep 1
}
stop() { kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; }
costs() { python3 "$HERE/tls_costs.py" "$@" --server-pid "$SERVER" -n "$N"; }

uptime | tee -a "$OUT/load.txt"
for round in $(seq "$ROUNDS"); do
  # 1. handshakes: one server per peer, plain and TLS alternating.
  outatime_start
  costs handshakes --port 19100 | sed 's/^{/{"peer": "outatime", /' | tee -a "$OUT/handshakes.jsonl"
  costs handshakes --port 19101 --tls --ca "$PKI/ca.pem" | sed 's/^{/{"peer": "outatime", /' | tee -a "$OUT/handshakes.jsonl"
  stop
  redis_start
  costs handshakes --port 16390 | sed 's/^{/{"peer": "redis", /' | tee -a "$OUT/handshakes.jsonl"
  costs handshakes --port 16391 --tls --ca "$PKI/ca.pem" | sed 's/^{/{"peer": "redis", /' | tee -a "$OUT/handshakes.jsonl"
  stop
  # 2. idle connections: a fresh server for each.
  for tls in "" "--tls --ca $PKI/ca.pem"; do
    port=$([ -z "$tls" ] && echo 19100 || echo 19101)
    outatime_start; costs idle --proto outatime --port "$port" $tls | tee -a "$OUT/idle.jsonl"; stop
    port=$([ -z "$tls" ] && echo 16390 || echo 16391)
    redis_start; costs idle --proto redis --port "$port" $tls | tee -a "$OUT/idle.jsonl"; stop
  done
  # 3. fan-out, 100 subscribers x 64 B, plain then TLS on one server, with
  #    the server's CPU time per delivery.
  outatime_start
  for tls in false true; do
    if [ "$tls" = true ]; then target="--host localhost --port 19101 --tls --ca $PKI/ca.pem"; else target="--port 19100"; fi
    before=$(awk '{print $14 + $15}' "/proc/$SERVER/stat")
    "$BIN/outatime-load" fanout $target --subscribers 100 --size 64 --messages "$MESSAGES" --json > "$OUT/fanout.tmp"
    ticks=$(( $(awk '{print $14 + $15}' "/proc/$SERVER/stat") - before ))
    jq -c --argjson tls "$tls" --argjson ticks "$ticks" --argjson hz "$(getconf CLK_TCK)" \
      '{tls: $tls} + . + {server_cpu_s: ($ticks / $hz), server_cpu_ns_per_delivery: ($ticks / $hz * 1e9 / .delivered | floor)}' \
      "$OUT/fanout.tmp" | tee -a "$OUT/fanout.jsonl"
  done
  stop
  uptime | tee -a "$OUT/load.txt"
done
