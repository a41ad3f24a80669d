#!/usr/bin/env python3
"""Flood trial (issue 28, scope point 8): connections opened at once from one
address, over its limit, that never send ``hello``.

1. starts ``outatime-server`` on 127.0.0.1, port 0 (``--max-connections-per-address``
   ``--per-address``, default 1,000), with this process's descriptor limit
   raised to its hard limit (the server inherits it);
2. connects a *bystander* from 127.0.0.2 (Linux answers all of 127.0.0.0/8:
   another client address), says ``hello`` and pings it every
   ``--ping-interval-ms`` from before the flood until its end;
3. opens ``--connections`` (default 20,000) connections from 127.0.0.1 at
   once, spread over ``--workers`` processes of ``tools/flood/flood.c``
   (compiled with ``cc`` into the run's folder; a process holds at most its
   descriptor limit), none of which ever sends anything, and watches each
   for ``--watch-s`` (25) seconds after it connected; the flood ends when
   every connection is answered (the bystander's pings with it).

Per connection it records what came and when, counted from the ``connect()``
call (*from attempt*: what the client waits in all, a connect the kernel
held back included) and from the connect's completion: a refusal (``error``
``server_busy`` + ``bye`` ``server_busy``), ``bye hello_timeout`` (the
connections within the limit, at the hello timeout), a close without a
frame, nothing at all by the end of the watch (*silent*), or a connect that
failed. It prints the counts, the refusal times (p50, p99, max), the
bystander's ping round trips (p50, p99, max, lost), the kernel's listen
queue counters (``/proc/net/netstat``: overflows, drops, SYN cookies) and
the server's ``stats`` ``connections_refused``.

PASS when every connection over the limit was refused or closed within
``--bound-s`` (10) of its attempt, none was silent, and the bystander's
ping p99 is under ``--ping-p99-ms`` (100). Exit 0 PASS, 1 FAIL, 2 bad use.

    python3 tools/flood_trial.py --server .build/release/outatime-server

Python 3 standard library only. Every wait is bounded.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import resource
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Optional

STARTUP_TIMEOUT = 30.0
SERVER_HOST = "127.0.0.1"
FLOOD_HOST = "127.0.0.1"
BYSTANDER_HOST = "127.0.0.2"
#: Connect attempts that get no answer at all within this are counted as failed.
CONNECT_TIMEOUT = 60.0


# --------------------------------------------------------------------------
# Frames
# --------------------------------------------------------------------------


def frame(body: dict) -> bytes:
    data = json.dumps(body, separators=(",", ":")).encode()
    return struct.pack(">I", len(data)) + data


def parse_frames(buf: bytes) -> list[dict]:
    """The whole frames in `buf` (a trailing partial frame is ignored)."""
    out = []
    pos = 0
    while pos + 4 <= len(buf):
        (length,) = struct.unpack(">I", buf[pos:pos + 4])
        if pos + 4 + length > len(buf):
            break
        try:
            out.append(json.loads(buf[pos + 4:pos + 4 + length]))
        except ValueError:
            out.append({"type": "unparsable"})
        pos += 4 + length
    return out


# --------------------------------------------------------------------------
# The flood: tools/flood/flood.c, one process per share of the connections
# --------------------------------------------------------------------------


def build_flood(work: Path) -> Path:
    """Compiles the flood client (C: a Python client was slower than the server it measured)."""
    source = Path(__file__).resolve().parent / "flood" / "flood.c"
    binary = work / "flood"
    compiler = os.environ.get("CC", "cc")
    subprocess.run([compiler, "-O2", "-Wall", "-o", str(binary), str(source)], check=True, timeout=120)
    return binary


def parse_rows(text: str) -> list[tuple]:
    """(outcome, s from attempt or None, s from connected or None, s to connect) per line."""
    rows = []
    for line in text.splitlines():
        outcome, attempt, connected, connect = line.split()
        rows.append((outcome, None if int(attempt) < 0 else int(attempt) / 1e6,
                     None if int(connected) < 0 else int(connected) / 1e6, int(connect) / 1e6))
    return rows


# --------------------------------------------------------------------------
# The bystander (another address), in a thread of the main process
# --------------------------------------------------------------------------


class Bystander(threading.Thread):
    def __init__(self, port: int, interval_s: float) -> None:
        super().__init__(daemon=True)
        self.port = port
        self.interval_s = interval_s
        self.rtts: list[float] = []
        #: When each ping was sent (time.monotonic()), beside ``rtts``.
        self.sent_at: list[float] = []
        self.lost = 0
        self.error: Optional[str] = None
        self.stop_event = threading.Event()
        self.sock = socket.create_connection((SERVER_HOST, port), timeout=5, source_address=(BYSTANDER_HOST, 0))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.next_id = 1
        reply = self.call({"type": "hello", "protocol": 1, "name": "bystander"}, timeout=5)
        if not reply.get("ok"):
            raise RuntimeError(f"bystander hello failed: {reply}")

    def read_frame(self, deadline: float) -> dict:
        while True:
            if len(self.buf) >= 4:
                (length,) = struct.unpack(">I", self.buf[:4])
                if len(self.buf) >= 4 + length:
                    body, self.buf = self.buf[4:4 + length], self.buf[4 + length:]
                    return json.loads(body)
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            self.sock.settimeout(left)
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("bystander closed by the server")
            self.buf += data

    def call(self, request: dict, timeout: float) -> dict:
        request = dict(request, id=self.next_id)
        self.next_id += 1
        self.sock.sendall(frame(request))
        deadline = time.monotonic() + timeout
        while True:
            reply = self.read_frame(deadline)
            if reply.get("id") == request["id"]:
                return reply

    def run(self) -> None:
        try:
            while not self.stop_event.is_set():
                sent = time.monotonic()
                try:
                    self.call({"type": "ping"}, timeout=5)
                    self.rtts.append(time.monotonic() - sent)
                    self.sent_at.append(sent)
                except TimeoutError:
                    self.lost += 1
                self.stop_event.wait(self.interval_s)
        except Exception as error:  # noqa: BLE001 (reported)
            self.error = repr(error)


# --------------------------------------------------------------------------
# The server and the kernel's counters
# --------------------------------------------------------------------------


def start_server(binary: Path, db: Path, log: Path, extra: list[str]) -> tuple[subprocess.Popen, int]:
    args = [str(binary), "--host", "127.0.0.1", "--port", "0", "--db", str(db), "--log-level", "warning"] + extra
    logf = open(log, "ab")
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=logf, stdin=subprocess.DEVNULL)
    lines: "queue.Queue[Optional[bytes]]" = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while True:
        try:
            line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            proc.kill()
            raise SystemExit(f"the server printed no 'listening on' line within {STARTUP_TIMEOUT} s")
        if line is None:
            raise SystemExit(f"the server exited before listening; log: {log}")
        m = re.fullmatch(r"listening on (\S+):(\d+)", line.decode(errors="replace").strip())
        if m:
            return proc, int(m.group(2))


NETSTAT_KEYS = ["ListenOverflows", "ListenDrops", "SyncookiesSent", "SyncookiesRecv", "SyncookiesFailed",
                "TCPReqQFullDoCookies", "TCPReqQFullDrop"]


def netstat() -> dict[str, int]:
    """TcpExt counters of this network namespace (empty if unreadable)."""
    try:
        lines = Path("/proc/net/netstat").read_text().splitlines()
    except OSError:
        return {}
    values: dict[str, int] = {}
    for names, nums in zip(lines[::2], lines[1::2]):
        if names.startswith("TcpExt:"):
            for k, v in zip(names.split()[1:], nums.split()[1:]):
                values[k] = int(v)
    return values


def percentile(values: list[float], p: float) -> Optional[float]:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def ms(value: Optional[float]) -> str:
    return "-" if value is None else f"{value * 1000:.0f} ms"


# --------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", type=Path, default=Path(".build/release/outatime-server"))
    ap.add_argument("--connections", type=int, default=20_000)
    ap.add_argument("--per-address", type=int, default=1_000, help="--max-connections-per-address")
    ap.add_argument("--workers", type=int, default=0, help="flood processes (0: enough for the descriptor limit)")
    ap.add_argument("--watch-s", type=float, default=25.0)
    ap.add_argument("--bound-s", type=float, default=10.0)
    ap.add_argument("--ping-interval-ms", type=float, default=10.0)
    ap.add_argument("--ping-p99-ms", type=float, default=100.0)
    ap.add_argument("--server-arg", action="append", default=[], help="one more server flag (repeatable)")
    args = ap.parse_args()
    if not args.server.exists():
        print(f"no server binary at {args.server}", file=sys.stderr)
        return 2
    if args.connections < 1 or args.per_address < 1:
        print("--connections and --per-address must be at least 1", file=sys.stderr)
        return 2

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    per_process = max(100, hard - 100)
    workers = args.workers or max(2, -(-args.connections // per_process))
    if -(-args.connections // workers) > per_process:
        print(f"{workers} workers cannot hold {args.connections} connections under a descriptor limit of {hard}",
              file=sys.stderr)
        return 2

    work = Path(tempfile.mkdtemp(prefix="outatime-flood-"))
    flood = build_flood(work)
    log = work / "server.log"
    proc, port = start_server(args.server, work / "flood.sqlite", log,
                              ["--max-connections-per-address", str(args.per_address)] + args.server_arg)
    print(f"server {args.server} on port {port} (descriptor limit {hard}); log {log}")
    print(f"flood: {args.connections} connections from {FLOOD_HOST} at once over {workers} processes, "
          f"per-address limit {args.per_address}, watched {args.watch_s:.0f} s each; bystander {BYSTANDER_HOST}")
    try:
        bystander = Bystander(port, args.ping_interval_ms / 1000)
        bystander.start()
        time.sleep(0.5)  # a few pings before the flood
        before = netstat()
        flood_started = time.monotonic()
        counts = [args.connections // workers + (1 if i < args.connections % workers else 0) for i in range(workers)]
        procs = [subprocess.Popen([str(flood), SERVER_HOST, str(port), str(n), str(args.watch_s), FLOOD_HOST],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for n in counts]
        rows: list = []
        failures: list[str] = []
        deadline = time.monotonic() + CONNECT_TIMEOUT + args.watch_s + 60
        for p in procs:
            try:
                out, err = p.communicate(timeout=max(1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate(timeout=10)
                failures.append("a flood process did not finish in time")
            if p.returncode != 0:
                failures.append(f"a flood process exited {p.returncode}: {err.strip()}")
            rows.extend(parse_rows(out))
        bystander.stop_event.set()
        bystander.join(timeout=10)
        after = netstat()
        stats = {}
        try:
            stats = bystander.call({"type": "stats"}, timeout=5).get("result") or {}
        except Exception as error:  # noqa: BLE001 (reported)
            failures.append(f"stats on the bystander failed: {error!r}")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)

    outcomes: dict[str, int] = {}
    for row in rows:
        outcomes[row[0]] = outcomes.get(row[0], 0) + 1
    over = [r for r in rows if r[0] != "bye_hello_timeout"]
    answered_attempt = [r[1] for r in over if r[1] is not None]
    answered_connected = [r[2] for r in over if r[2] is not None]
    connect_times = [r[3] for r in rows]
    late = sum(1 for r in over if r[1] is None or r[1] > args.bound_s)
    silent = outcomes.get("silent", 0)
    print("outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())))
    print(f"over the limit: {len(over)}; answered (refusal or close) from the attempt p50 {ms(percentile(answered_attempt, 50))}, "
          f"p99 {ms(percentile(answered_attempt, 99))}, max {ms(max(answered_attempt, default=None))}; "
          f"from connected p50 {ms(percentile(answered_connected, 50))}, p99 {ms(percentile(answered_connected, 99))}, "
          f"max {ms(max(answered_connected, default=None))}")
    print(f"  not answered within {args.bound_s:.0f} s of the attempt: {late} (silent at {args.watch_s:.0f} s: {silent})")
    print(f"connect time p50 {ms(percentile(connect_times, 50))}, p99 {ms(percentile(connect_times, 99))}, "
          f"max {ms(max(connect_times, default=None))}")
    rtts = bystander.rtts
    p99 = percentile(rtts, 99)
    print(f"bystander ({BYSTANDER_HOST}): {len(rtts)} pings, p50 {ms(percentile(rtts, 50))}, p99 {ms(p99)}, "
          f"max {ms(max(rtts, default=None))}"
          + (f" (sent {bystander.sent_at[rtts.index(max(rtts))] - flood_started:+.1f} s after the flood began)" if rtts else "")
          + f", lost {bystander.lost}" + (f", error {bystander.error}" if bystander.error else ""))
    if before and after:
        print("kernel (TcpExt, this namespace): " + ", ".join(f"{k} +{after.get(k, 0) - before.get(k, 0)}" for k in NETSTAT_KEYS))
    if stats:
        print(f"server stats: connections_refused {stats.get('connections_refused')}, accept_errors {stats.get('accept_errors')}")
    for failure in failures:
        print("FAIL: " + failure)
    ok = (not failures and len(rows) == args.connections and late == 0 and silent == 0
          and bystander.error is None and bystander.lost == 0 and p99 is not None and p99 * 1000 < args.ping_p99_ms)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
