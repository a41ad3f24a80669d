#!/usr/bin/env python3
"""WAN trials (issue 27, "Must reach"): the terminal client and the Python
client as a remote operator uses them, over an emulated wide-area link.

The rig: three network namespaces on this machine,

    server ns ── veth ── middle ns ── veth ── client ns
   outatime-server      the bridge        outatime watch, one-shots,
   + the busy load      (this script)     the Python client

The middle namespace has no addresses: a small user-space bridge (this
script, `_bridge`) forwards Ethernet frames between its two interfaces on
AF_PACKET raw sockets, delaying each frame (delay ± jitter, first in first
out per direction), dropping some (loss) or all of them (blackhole). It is
packet level, never a TCP proxy: TCP sees the delay and the loss itself.
This kernel has no `sch_netem`; `tc ... tbf` on the middle interfaces caps
the bandwidth. Cuts: *blackhole* (the bridge drops every frame, no link
event anywhere: a mid-path outage) and *link-down* (`ip link set … down` on
the middle end of the client's veth: the client sees its carrier go).

The server (TLS only, as a remote operator would use it; `--plain` for
plain TCP) is kept busy by an agent in its own namespace: a DeLorean trip
every 15 s, five running countdowns, a running lap stopwatch with a lap
every 20 s and a dispatch every 10 s (channels delorean/wan, timers/wan,
laps/wan, starport/wan). An observer, also in the server namespace, sees
everything at once (no link in between): tick delays are measured against
it, and it is the "second watcher on the server side" that sees `presence`.

Scenarios (`--scenarios`, comma-separated; all by default):

  healthy    80 ms RTT, 1 % loss: tick delay p50/p99 (client vs observer,
             the DeLorean's ticks), ticks missing, one-shot latency
  blackhole  a 20 s blackhole: when `watch` marks the board stale (or
             leaves "connected"), when it shows live data again; when the
             Python client raises or reconnects; gaps and duplicates
  ghost      a watcher and a timer's only viewer cut off (45 s blackhole):
             when the observer sees them leave, when the timer stops; a
             10 s cut: is any session listed twice after a reconnect
  oneshots   100 `outatime timers add --timeout 4`, ten at a time, the
             path cut (blackhole or link-down, 3-6 s) the moment the server
             applies the first of the ten; a script retries "unreachable"
             (exit 3) and, on an "outcome unknown" status (any other than
             0, 1, 3, 64), looks for its timer before it retries (with the
             same key when `timers add` has an idempotency-key flag):
             timers afterwards (100?), exit statuses that lied
  flood      1 Mbit link, 250 messages/s × 2 KB on a channel `watch`
             subscribes to: slow-consumer closes (server `stats`) and how
             many the clients learned of; the age of values shown as live;
             messages the Python client lost, and whether it was told
  bigtimers  1 Mbit link, a 6,000-timer list, all running: does the
             Python client (default 5 s timeout) subscribe; how often
             `watch` gets a countdown update
  cuts       20 cuts of each kind (blackhole, link-down; 3 and 8 s):
             gaps and duplicates in seq order for `watch` and the Python
             client, reloads (a full state instead of the missed events)
  short      (only when named) the short version for `make wan-quick`:
             80 ms RTT and 1 % loss, one 15 s blackhole, generous bounds

`watch` is read through `outatime watch --jsonl` (what the board shows:
connection changes with reasons, stale/live marks per panel, the values
shown), or `--json` (the pushes) from a `watch` without it; what a line
means is decided in one place, `watch_observations()`. The ages of the
countdowns shown are dated independently, from the server side's ticks.

Timings are seconds-scale detection times and counts where possible: the
machine is shared, so millisecond figures are noisy.

    sudo python3 tools/wan_trials.py                       # every scenario
    python3 tools/wan_trials.py --quick                    # shorter cuts, fewer trials
    python3 tools/wan_trials.py --scenarios blackhole,ghost
    make wan-trials [WAN_ARGS='--quick']

Needs root and `ip` (iproute2) with network namespaces, `tc` for the
bandwidth cap, `openssl` for the TLS certificate; without them it says so
and exits 2. Prints a line per observation, a table of figures with
PASS/FAIL against the issue's "Must reach", and a markdown block for
docs/BENCHMARKS.md (`--markdown FILE` writes it too). Exits 0 when every
Must-reach check that ran passed, 1 otherwise, 2 for bad usage or a rig
that cannot be built. Every wait has a deadline; `--budget-s` bounds the
run. `--dir` keeps the server's log and every process's records (one JSON
object a line, monotonic times) for a closer look; `--json` writes the
figures, and `--baseline` compares the healthy link with such a file. The namespaces and every process are removed on exit, on Ctrl-C and
on SIGTERM.

Python 3 standard library plus the project's client (clients/python).
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import fcntl
import heapq
import json
import os
import random
import re
import select
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "clients" / "python"))

SCRIPT = str(Path(__file__).resolve())
SCENARIOS = ("healthy", "blackhole", "ghost", "oneshots", "flood", "bigtimers", "cuts")
EXTRA_SCENARIOS = ("short",)   # run only when named: the short version (make wan-quick)
SERVER_PORT = 1986       # inside the server namespace: no other listener there
BUSY_CHANNELS = ("delorean/wan", "timers/wan", "laps/wan", "starport/wan")
EXIT_REFUSED, EXIT_UNREACHABLE, EXIT_USAGE = 1, 3, 64   # clients/terminal/ExitStatus.swift


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def emit(record: dict[str, Any]) -> None:
    """An agent's record: one JSON object a line on stdout, with the
    monotonic time (one clock for every process and namespace)."""
    record.setdefault("t", time.monotonic())
    sys.stdout.write(json.dumps(record, separators=(",", ":")) + "\n")
    sys.stdout.flush()


# --------------------------------------------------------------------------
# Interface offloads (the ethtool ioctl: no ethtool binary needed)
# --------------------------------------------------------------------------

SIOCETHTOOL = 0x8946
ETHTOOL_STXCSUM, ETHTOOL_SSG, ETHTOOL_STSO, ETHTOOL_SGSO, ETHTOOL_SGRO = 0x17, 0x19, 0x1F, 0x24, 0x2C


def offloads_off(ifname: str) -> list[str]:
    """Turn off checksum offload, TSO, GSO and GRO on `ifname` (in this
    process's namespace). A veth otherwise hands the bridge 64 KB frames
    with unfinished checksums, which it could not send on as they are.
    Returns the settings that failed (an empty list when all took)."""
    failed = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for cmd in (ETHTOOL_STXCSUM, ETHTOOL_STSO, ETHTOOL_SGSO, ETHTOOL_SGRO, ETHTOOL_SSG):
            value = ctypes.create_string_buffer(struct.pack("II", cmd, 0))
            ifreq = struct.pack("16sP", ifname.encode(), ctypes.addressof(value))
            try:
                fcntl.ioctl(sock.fileno(), SIOCETHTOOL, ifreq)
            except OSError as exc:
                failed.append(f"{ifname} 0x{cmd:x}: {exc.strerror}")
    return failed


# --------------------------------------------------------------------------
# The bridge (runs in the middle namespace: `wan_trials.py _bridge A B`)
# --------------------------------------------------------------------------

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


class Direction:
    """One way through the bridge: its impairments and its queue of frames
    waiting for their time (first in, first out: jitter delays frames but
    never reorders them, so TCP sees delay and loss, not reordering)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.delay = 0.0
        self.jitter = 0.0
        self.loss = 0.0
        self.blackhole = False
        self.queue: collections.deque[tuple[float, bytes]] = collections.deque()
        self.last_due = 0.0
        self.forwarded = 0
        self.dropped = 0
        self.blackholed = 0
        self.send_errors = 0

    def take(self, frame: bytes, now: float, rng: random.Random) -> None:
        if self.blackhole:
            self.blackholed += 1
            return
        if self.loss > 0 and rng.random() < self.loss:
            self.dropped += 1
            return
        due = now + max(0.0, self.delay + (rng.uniform(-self.jitter, self.jitter) if self.jitter else 0.0))
        due = max(due, self.last_due)
        self.last_due = due
        self.queue.append((due, frame))

    def stats(self) -> dict[str, Any]:
        return {"forwarded": self.forwarded, "dropped": self.dropped, "blackholed": self.blackholed,
                "send_errors": self.send_errors, "queued": len(self.queue)}


def bridge_main(if_a: str, if_b: str) -> int:
    """Forward frames between `if_a` (the server's side) and `if_b` (the
    client's side). Commands on stdin, one JSON object a line:
    {"cmd": "set", "delay_ms": D, "jitter_ms": J, "loss": P} (each way),
    {"cmd": "blackhole", "on": true|false}, {"cmd": "stats"}, {"cmd": "quit"}."""
    rng = random.Random()
    socks = {}
    for name in (if_a, if_b):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        s.bind((name, ETH_P_ALL))
        s.setblocking(False)
        socks[name] = s
    down, up = Direction("down"), Direction("up")     # server → client, client → server
    route = {if_a: (down, socks[if_b]), if_b: (up, socks[if_a])}
    out_of = {id(down): socks[if_b], id(up): socks[if_a]}
    stdin = sys.stdin.buffer.raw if hasattr(sys.stdin.buffer, "raw") else sys.stdin.buffer
    pending = b""
    emit({"k": "ready"})
    while True:
        now = time.monotonic()
        for d in (down, up):
            sock = out_of[id(d)]
            while d.queue and d.queue[0][0] <= now:
                _, frame = d.queue.popleft()
                try:
                    sock.send(frame)
                    d.forwarded += 1
                except OSError:
                    # ENOBUFS (the tbf queue is full: a tail drop), ENETDOWN
                    # (the link is cut), EAGAIN: the frame is lost, as on a wire.
                    d.send_errors += 1
        nxt = min([d.queue[0][0] for d in (down, up) if d.queue], default=now + 0.5)
        timeout = max(0.0, nxt - time.monotonic())
        try:
            ready, _, _ = select.select([socks[if_a], socks[if_b], stdin], [], [], timeout)
        except InterruptedError:
            continue
        now = time.monotonic()
        for r in ready:
            if r is stdin:
                chunk = os.read(stdin.fileno(), 65536)
                if not chunk:
                    return 0
                pending += chunk
                while b"\n" in pending:
                    line, pending = pending.split(b"\n", 1)
                    if not line.strip():
                        continue
                    cmd = json.loads(line)
                    what = cmd.get("cmd")
                    if what == "quit":
                        return 0
                    if what == "set":
                        for d in (down, up):
                            d.delay = float(cmd.get("delay_ms", 0)) / 1000.0
                            d.jitter = float(cmd.get("jitter_ms", 0)) / 1000.0
                            d.loss = float(cmd.get("loss", 0))
                    elif what == "blackhole":
                        for d in (down, up):
                            d.blackhole = bool(cmd.get("on"))
                            if d.blackhole:
                                d.blackholed += len(d.queue)   # in flight: lost with the path
                                d.queue.clear()
                    emit({"k": "stats", "down": down.stats(), "up": up.stats(), "cmd": what})
                continue
            direction, _ = route[[n for n, s in socks.items() if s is r][0]]
            for _ in range(512):
                try:
                    frame, addr = r.recvfrom(65535)
                except (BlockingIOError, InterruptedError):
                    break
                except OSError:
                    break   # ENETDOWN once after a link went down
                if addr[2] == PACKET_OUTGOING:
                    continue   # our own sends, seen on the way out
                direction.take(frame, now, rng)


# --------------------------------------------------------------------------
# The rig: namespaces, veths, the bridge, the bandwidth cap, cuts
# --------------------------------------------------------------------------


def run(argv: list[str], timeout: float = 15, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError(f"`{' '.join(argv)}` failed ({r.returncode}): {r.stderr.strip() or r.stdout.strip()}")
    return r


class Rig:
    """Three namespaces and the bridge between them (see the module text)."""

    PREFIX = "otwan"

    def __init__(self, tag: Optional[str] = None) -> None:
        self.tag = tag or str(os.getpid())
        third = 10 + int(self.tag) % 240
        self.ns_srv, self.ns_mid, self.ns_cli = (f"{self.PREFIX}-{x}-{self.tag}" for x in ("srv", "mid", "cli"))
        # Interface names: at most 15 bytes, and not `a…` (`ip link add a` reads as `address`).
        short = self.tag[-6:]
        self.if_srv, self.if_srv_mid = f"ows{short}", f"owsm{short}"
        self.if_cli, self.if_cli_mid = f"owc{short}", f"owcm{short}"
        self.server_ip, self.client_ip = f"10.213.{third}.1", f"10.213.{third}.2"
        self.bridge: Optional[subprocess.Popen] = None
        self.bridge_lines: "queue_t" = QueueLines()
        self.made: list[str] = []
        self.shaped = False
        self.link_down = False
        self.profile: dict[str, float] = {"delay_ms": 0, "jitter_ms": 0, "loss": 0}

    @staticmethod
    def available() -> tuple[bool, str]:
        if os.geteuid() != 0:
            return False, "not root: the rig makes network namespaces (run as root, e.g. sudo make wan-trials)"
        for tool in ("ip", "tc", "openssl"):
            if not shutil.which(tool):
                return False, f"no `{tool}` on PATH (iproute2 for ip and tc; openssl)"
        probe = f"{Rig.PREFIX}-probe-{os.getpid()}"
        r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True, timeout=10)
        if r.returncode != 0:
            return False, f"network namespaces unavailable: `ip netns add` failed: {r.stderr.strip()}"
        subprocess.run(["ip", "netns", "del", probe], capture_output=True, timeout=10)
        return True, ""

    @classmethod
    def remove_stale(cls) -> list[str]:
        """Namespaces an earlier run left behind (its process is gone)."""
        out = run(["ip", "netns", "list"], check=False).stdout
        removed = []
        for line in out.splitlines():
            m = re.match(rf"({cls.PREFIX}-(?:srv|mid|cli)-(\d+))", line.strip())
            if m and not Path(f"/proc/{m.group(2)}").exists():
                # Its processes (server, watch: the agents and the bridge quit when their
                # stdin closes) were started by that run; nothing else runs in its namespaces.
                for pid in run(["ip", "netns", "pids", m.group(1)], check=False).stdout.split():
                    try:
                        os.kill(int(pid), signal.SIGKILL)
                    except (OSError, ValueError):
                        pass
                run(["ip", "netns", "del", m.group(1)], check=False)
                removed.append(m.group(1))
        return removed

    def ns(self, ns: str, *argv: str) -> list[str]:
        """`argv` run in namespace `ns` (`ip netns exec` execs in place: the
        Popen's pid is the program's)."""
        return ["ip", "netns", "exec", ns, *argv]

    def setup(self) -> None:
        for ns in (self.ns_srv, self.ns_mid, self.ns_cli):
            run(["ip", "netns", "add", ns])
            self.made.append(ns)
            run(self.ns(ns, "ip", "link", "set", "lo", "up"))
        for end, mid in ((self.if_srv, self.if_srv_mid), (self.if_cli, self.if_cli_mid)):
            run(["ip", "link", "add", end, "type", "veth", "peer", "name", mid])
            for name in (end, mid):
                failed = offloads_off(name)
                if any("0x17" in f or "0x1f" in f for f in failed):
                    raise RuntimeError(f"cannot turn off checksum offload/TSO: {failed}")
        run(["ip", "link", "set", self.if_srv, "netns", self.ns_srv])
        run(["ip", "link", "set", self.if_cli, "netns", self.ns_cli])
        for mid in (self.if_srv_mid, self.if_cli_mid):
            run(["ip", "link", "set", mid, "netns", self.ns_mid])
            run(self.ns(self.ns_mid, "ip", "link", "set", mid, "up"))
        for ns, ifname, addr in ((self.ns_srv, self.if_srv, self.server_ip), (self.ns_cli, self.if_cli, self.client_ip)):
            run(self.ns(ns, "ip", "addr", "add", f"{addr}/24", "dev", ifname))
            run(self.ns(ns, "ip", "link", "set", ifname, "up"))
        self.bridge = subprocess.Popen(self.ns(self.ns_mid, sys.executable, SCRIPT, "_bridge", self.if_srv_mid, self.if_cli_mid),
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None, text=True, bufsize=1)
        self.bridge_lines.follow(self.bridge.stdout)
        if self.bridge_lines.wait(lambda r: r.get("k") == "ready", 10) is None:
            raise RuntimeError("the bridge did not start")

    def _bridge_cmd(self, **cmd: Any) -> dict[str, Any]:
        assert self.bridge is not None and self.bridge.stdin is not None
        mark = self.bridge_lines.count()
        self.bridge.stdin.write(json.dumps(cmd) + "\n")
        self.bridge.stdin.flush()
        got = self.bridge_lines.wait(lambda r: r.get("k") == "stats", 5, start=mark)
        return got or {}

    def set_profile(self, delay_ms: float = 0, jitter_ms: float = 0, loss: float = 0) -> None:
        """Each way: `delay_ms` ± `jitter_ms`, `loss` (0..1). An RTT of R is delay R/2."""
        self.profile = {"delay_ms": delay_ms, "jitter_ms": jitter_ms, "loss": loss}
        self._bridge_cmd(cmd="set", **self.profile)

    def blackhole(self, on: bool) -> dict[str, Any]:
        return self._bridge_cmd(cmd="blackhole", on=on)

    def stats(self) -> dict[str, Any]:
        return self._bridge_cmd(cmd="stats")

    def set_link(self, up: bool) -> None:
        """Link-down cut: the middle end of the client's veth; the client's
        own interface loses its carrier (a link event on the client side only)."""
        run(self.ns(self.ns_mid, "ip", "link", "set", self.if_cli_mid, "up" if up else "down"))
        self.link_down = not up

    def cap(self, rate: Optional[str]) -> None:
        """`rate` (e.g. "1mbit") each way with tbf on the middle interfaces; None removes it."""
        for ifname in (self.if_srv_mid, self.if_cli_mid):
            if rate is None:
                run(self.ns(self.ns_mid, "tc", "qdisc", "del", "dev", ifname, "root"), check=False)
            else:
                run(self.ns(self.ns_mid, "tc", "qdisc", "replace", "dev", ifname, "root", "tbf",
                            "rate", rate, "burst", "6kb", "latency", "300ms"))
        self.shaped = rate is not None

    def heal(self) -> None:
        """Whatever a scenario left: link up, no blackhole, no cap."""
        if self.link_down:
            self.set_link(True)
        self.blackhole(False)
        if self.shaped:
            self.cap(None)

    def teardown(self) -> None:
        if self.bridge is not None:
            stop_process(self.bridge, "bridge")
            self.bridge = None
        for ns in reversed(self.made):
            run(["ip", "netns", "del", ns], check=False)
        self.made = []


# --------------------------------------------------------------------------
# Processes and their line output
# --------------------------------------------------------------------------


class QueueLines:
    """Lines a process writes, each stamped on arrival (monotonic and wall
    clock) and parsed when JSON; read by a thread, waited on by the caller."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.cond = threading.Condition()
        self.thread: Optional[threading.Thread] = None
        self.closed = False

    def follow(self, stream: Any) -> None:
        def pump() -> None:
            for line in stream:
                now, wall = time.monotonic(), time.time()
                text = line.rstrip("\n")
                try:
                    rec = json.loads(text)
                    if not isinstance(rec, dict):
                        rec = {"raw": text}
                except ValueError:
                    rec = {"raw": text}
                rec["_t"], rec["_wall"] = now, wall
                with self.cond:
                    self.records.append(rec)
                    self.cond.notify_all()
            with self.cond:
                self.closed = True
                self.cond.notify_all()
        self.thread = threading.Thread(target=pump, daemon=True)
        self.thread.start()

    def count(self) -> int:
        with self.cond:
            return len(self.records)

    def snapshot(self) -> list[dict[str, Any]]:
        with self.cond:
            return list(self.records)

    def wait(self, pred: Callable[[dict[str, Any]], bool], timeout: float, start: int = 0) -> Optional[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        with self.cond:
            i = start
            while True:
                while i < len(self.records):
                    if pred(self.records[i]):
                        return self.records[i]
                    i += 1
                left = deadline - time.monotonic()
                if left <= 0 or self.closed:
                    return None
                self.cond.wait(left)


queue_t = QueueLines


def stop_process(proc: subprocess.Popen, what: str, grace: float = 5.0) -> None:
    """SIGTERM, then SIGKILL after `grace`; always reaped."""
    if proc.poll() is None:
        try:
            if proc.stdin:
                proc.stdin.close()
        except OSError:
            pass
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


class Proc:
    """A process of the run (server, agent, watch), its lines followed."""

    def __init__(self, name: str, argv: list[str], log_path: Optional[str] = None, stdin: bool = False) -> None:
        self.name = name
        self.lines = QueueLines()
        err = open(log_path, "a") if log_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err,
                                     stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, text=True, bufsize=1)
        if log_path:
            err.close()
        self.lines.follow(self.proc.stdout)
        self.started = time.monotonic()

    def send(self, **cmd: Any) -> None:
        if self.proc.stdin and self.proc.poll() is None:
            try:
                self.proc.stdin.write(json.dumps(cmd) + "\n")
                self.proc.stdin.flush()
            except OSError:
                pass

    def stop(self, grace: float = 5.0) -> None:
        stop_process(self.proc, self.name, grace)
        if self.lines.thread:
            self.lines.thread.join(5)

    def records(self, kind: Optional[str] = None) -> list[dict[str, Any]]:
        recs = self.lines.snapshot()
        return recs if kind is None else [r for r in recs if r.get("k") == kind]


# --------------------------------------------------------------------------
# Agents: Python clients in a namespace (`wan_trials.py _agent ROLE ...`),
# reporting one JSON record a line; commands on stdin
# --------------------------------------------------------------------------


def stdin_commands() -> "collections.deque[dict[str, Any]]":
    """Commands from the orchestrator, read by a thread; EOF is a quit."""
    q: collections.deque[dict[str, Any]] = collections.deque()

    def pump() -> None:
        for line in sys.stdin:
            try:
                q.append(json.loads(line))
            except ValueError:
                pass
        q.append({"cmd": "quit"})
    threading.Thread(target=pump, daemon=True).start()
    return q


def make_client(a: argparse.Namespace, name: str, timeout: Optional[float] = None) -> Any:
    from outatime import Client
    kwargs: dict[str, Any] = {"name": name}
    if timeout is not None:
        kwargs["timeout"] = timeout
    if a.ca:
        kwargs.update(tls=True, ca_file=a.ca)
    return Client(a.host, a.port, **kwargs)


def push_record(push: dict[str, Any]) -> dict[str, Any]:
    """What an agent reports of a push (ticks cut down to what is measured)."""
    kind = push.get("type")
    rec: dict[str, Any] = {"k": kind, "ch": push.get("channel")}
    if kind == "event":
        rec.update(seq=push.get("seq"), ev=push.get("event"))
    elif kind == "tick":
        data = push.get("data") or {}
        if "speed_mph" in data:
            rec["speed"] = data["speed_mph"]
        if "total_elapsed_ms" in data:
            rec["lap_ms"] = data["total_elapsed_ms"]
        if "at" in data:
            rec["at"] = data["at"]
            rec["n"] = len(data.get("timers") or [])
            first = (data.get("timers") or [None])[0]
            if isinstance(first, dict):
                rec["r"] = [first.get("id"), first.get("remaining_s")]   # dates a countdown shown elsewhere
    elif kind == "message":
        data = push.get("data")
        rec["n"] = data.get("n") if isinstance(data, dict) else None
    elif kind == "presence":
        rec["joined"] = [[w.get("session"), w.get("name")] for w in push.get("joined") or []]
        rec["left"] = [[w.get("session"), w.get("name")] for w in push.get("left") or []]
        rec["count"] = push.get("watcher_count")
    elif kind == "bye":
        rec["reason"] = push.get("reason")
    elif kind == "error":
        rec["error"] = push.get("error")
    else:
        rec["push"] = {k: v for k, v in push.items() if k != "data"}   # a later revision's push (`dropped`, …)
    return rec


def agent_client(a: argparse.Namespace) -> int:
    """A Python-client application: subscribe to `--channels`, report every
    push; with `--reconnect`, on any failure connect again and recover each
    channel with `since` (the documented way, section 9). `--view CH:ID`
    views a timer (its countdown runs while some connection views it)."""
    from outatime import ConnectionClosed, OutaTimeError, OutaTimeTimeout
    cmds = stdin_commands()
    client = make_client(a, a.name, a.timeout)
    channels = [c for c in a.channels.split(",") if c]
    session: Optional[str] = None

    def setup() -> None:
        nonlocal session
        t0 = time.monotonic()
        hello = client.connect()
        session = client.session
        emit({"k": "hello", "session": session, "t0": t0, "resumed": hello.get("resumed")})
        for ch in channels:
            t1 = time.monotonic()
            result = client.recover(ch) if ch in client.channels else client.subscribe(ch)
            emit({"k": "sub", "ch": ch, "seq": result.get("seq"), "recovered": result.get("recovered"),
                  "events": [e.get("seq") for e in result.get("events") or []], "t0": t1,
                  "watchers": [[w.get("session"), w.get("name")] for w in result.get("watchers") or []]})
        for view in a.view or []:
            ch, ident = view.rsplit(":", 1)
            client.command(ch, "start", id=int(ident))
            emit({"k": "viewing", "ch": ch, "id": int(ident)})

    def failed(exc: BaseException, where: str) -> None:
        emit({"k": "fail", "where": where, "cls": type(exc).__name__, "code": getattr(exc, "code", None),
              "msg": str(exc)[:300], "bye": client.bye_reason})

    up = False
    next_try = 0.0
    while True:
        while cmds:
            if cmds.popleft().get("cmd") == "quit":
                client.close()
                return 0
        if not up:
            if time.monotonic() < next_try:
                time.sleep(0.05)
                continue
            try:
                setup()
                up = True
            except (OutaTimeError, OSError) as exc:
                failed(exc, "setup")
                client.close()
                if not a.reconnect:
                    return 0 if a.stay else 1
                next_try = time.monotonic() + 0.5
            continue
        try:
            push = client.next_push(0.3)
        except OutaTimeTimeout:
            continue
        except (ConnectionClosed, OutaTimeError, OSError) as exc:
            failed(exc, "read")
            # Pushes already received are read first: recovery resumes after them.
            while client.pending_pushes():
                emit(push_record(client.next_push(0)))
            client.close()
            up = False
            if not a.reconnect:
                while True:   # stay, reporting nothing more, until told to quit
                    if cmds and cmds.popleft().get("cmd") == "quit":
                        return 0
                    time.sleep(0.1)
            next_try = time.monotonic() + 0.2
            continue
        emit(push_record(push))
        if client.session != session:   # a client that reconnects by itself
            emit({"k": "hello", "session": client.session, "inner": True})
            session = client.session


def agent_busy(a: argparse.Namespace) -> int:
    """The server's busy load (issue 27): a DeLorean trip every 15 s, five
    running countdowns, a running stopwatch with a lap every 20 s, a
    dispatch every 10 s. Commands: {"cmd": "big", "n": N} makes a list
    timers/wan-big of N running timers; {"cmd": "bigstop"} stops them."""
    from outatime import OutaTimeError, OutaTimeTimeout
    cmds = stdin_commands()
    c = make_client(a, "wan-busy", 15.0)
    c.connect()
    for ch in BUSY_CHANNELS:
        c.subscribe(ch)
    c.command("delorean/wan", "set_destination", time="1985-10-26T01:21:00Z")
    laps = c.channels["laps/wan"].state or {}
    if laps.get("status") != "running":
        c.command("laps/wan", "start")
    timers = (c.channels["timers/wan"].state or {}).get("timers") or []
    for i in range(5 - len(timers)):
        c.command("timers/wan", "add", event=f"busy {i + 1}", location="wan", remaining_s=86400)
    for t in (c.get("timers/wan")["state"]["timers"]):
        c.command("timers/wan", "start", id=t["id"])
    emit({"k": "ready"})
    now = time.monotonic()
    next_trip, next_lap, next_dispatch = now + 1.0, now + 20.0, now + 2.0
    trips = 0

    def act(ch: str, action: str, **args: Any) -> None:
        try:
            c.command(ch, action, **args)
        except OutaTimeError as exc:
            emit({"k": "busy_error", "ch": ch, "action": action, "code": exc.code, "msg": exc.message[:200]})

    while True:
        while cmds:
            cmd = cmds.popleft()
            what = cmd.get("cmd")
            if what == "quit":
                c.close()
                return 0
            if what == "big":
                make_big_list(c, int(cmd.get("n", 6000)))
            elif what == "bigstop":
                try:
                    c.unsubscribe("timers/wan-big")
                except OutaTimeError as exc:
                    emit({"k": "busy_error", "action": "bigstop", "msg": str(exc)[:200]})
                emit({"k": "bigstopped"})
        now = time.monotonic()
        if now >= next_trip:
            trips += 1
            emit({"k": "trip", "n": trips})
            act("delorean/wan", "travel")
            next_trip += 15.0
        if now >= next_lap:
            act("laps/wan", "lap")
            next_lap += 20.0
        if now >= next_dispatch:
            act("starport/wan", "dispatch", model="SWingV2", path="AC", note=f"wan {trips}")
            next_dispatch += 10.0
        wait = max(0.01, min(next_trip, next_lap, next_dispatch) - time.monotonic())
        try:
            c.next_push(min(wait, 0.2))
            while c.pending_pushes():
                c.next_push(0)
        except OutaTimeTimeout:
            pass


def make_big_list(c: Any, n: int) -> None:
    """timers/wan-big with `n` timers, every one viewed (running): the
    commands pipelined (sent without waiting, a `ping` every 200 to pace)."""
    ch = "timers/wan-big"
    c.subscribe(ch)
    have = len((c.channels[ch].state or {}).get("timers") or [])
    t0 = time.monotonic()
    for i in range(have, n):
        c.send({"type": "command", "id": f"big{i}", "channel": ch, "action": "add",
                "args": {"event": f"big {i + 1}", "location": "wan", "remaining_s": 86400}})
        if i % 200 == 199:
            c.ping()
    c.ping()
    ids = [t["id"] for t in c.get(ch)["state"]["timers"]]
    for k, ident in enumerate(ids):
        c.send({"type": "command", "id": f"bigv{k}", "channel": ch, "action": "start", "args": {"id": ident}})
        if k % 200 == 199:
            c.ping()
    c.ping()
    running = sum(1 for t in c.get(ch)["state"]["timers"] if t.get("status") == "running")
    while c.pending_pushes():
        c.next_push(0)
    emit({"k": "big", "timers": len(ids), "running": running, "s": round(time.monotonic() - t0, 1)})


def agent_flood(a: argparse.Namespace) -> int:
    """`--rate` messages/s of `--size` bytes on `--channels` (the first),
    as `publish` without an id (no reply: the publisher is not the
    bottleneck). Each carries its number `n`; a record a second."""
    cmds = stdin_commands()
    c = make_client(a, "wan-flood", 15.0)
    c.connect()
    ch = a.channels.split(",")[0]
    pad = "x" * max(0, a.size - 40)
    n = 0
    t0 = time.monotonic()
    last_report = t0
    emit({"k": "ready"})
    while True:
        if cmds and cmds.popleft().get("cmd") == "quit":
            emit({"k": "flood", "n": n, "final": True})
            c.close()
            return 0
        now = time.monotonic()
        due = int((now - t0) * a.rate)
        while n < due:
            n += 1
            c.send({"type": "publish", "channel": ch, "data": {"n": n, "pad": pad}})
        if now - last_report >= 1.0:
            emit({"k": "flood", "n": n})
            last_report = now
        while c.pending_pushes():
            c.next_push(0)
        time.sleep(0.004)


def agent_query(a: argparse.Namespace) -> int:
    """One request (`--query get|stats`) printed as a record; for counting
    afterwards from the server's side."""
    c = make_client(a, "wan-query", 15.0)
    c.connect()
    if a.query == "stats":
        emit({"k": "result", "result": c.stats()})
    elif a.query == "command":   # a timer to view: added to --channels, the result is the timer
        emit({"k": "result", "result": c.command(a.channels, "add", event="viewed", location="wan", remaining_s=36000)})
    else:
        emit({"k": "result", "result": c.get(a.channels)})
    c.close()
    return 0


def agent_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="wan_trials.py _agent")
    p.add_argument("role", choices=["client", "busy", "flood", "query"])
    p.add_argument("--host", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--ca", help="TLS with this CA (else plain TCP)")
    p.add_argument("--name", default="wan-python")
    p.add_argument("--channels", default=",".join(BUSY_CHANNELS))
    p.add_argument("--timeout", type=float, default=None, help="the Client's timeout (its default: 5 s)")
    p.add_argument("--reconnect", action="store_true")
    p.add_argument("--stay", action="store_true", help="without --reconnect: wait for quit after a failed setup")
    p.add_argument("--view", action="append", help="CHANNEL:ID of a timer to view")
    p.add_argument("--rate", type=float, default=250.0)
    p.add_argument("--size", type=int, default=2048)
    p.add_argument("--query", default="get")
    a = p.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        return {"client": agent_client, "busy": agent_busy, "flood": agent_flood, "query": agent_query}[a.role](a)
    except KeyboardInterrupt:
        return 0
    except BrokenPipeError:
        return 0


# --------------------------------------------------------------------------
# What `outatime watch --json` says, in one place
# --------------------------------------------------------------------------


def watch_observations(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """One line of `outatime watch --jsonl` (or, from a watch without it,
    `--json`) as the observations the scenarios use, each a dict with `k`:

      event {ch, seq, replayed}     a durable event (replayed: recovered)
      tick {ch, speed?, lap_ms?, at?, values?, shown?}  data shown
      presence {ch, joined, left}   [session, name] pairs (--json only)
      sync {ch, seq, method}        snapshot | recovered | reloaded
      up {}                         connected (or recovered)
      down {state, reason}          connecting, reconnecting or closed
      stale {ch, age_s, why}        a panel marked stale (ch None: the link)
      fresh {ch}                    a panel (or the link) live again
      other {type}                  anything else (counted, not used)

    `--jsonl` (WatchJSONL.swift): connection {state, reason, reason_code},
    link and freshness {channel?, live, age_ms, why}, shown {channel, seq,
    live, values}, event, sync; every object with mono_ms and wall.
    `--json` (a watch from before issue 27): each push as the server sent
    it, sync, connection {state, reason?}; no stale marks."""
    typ = obj.get("type")
    if typ == "shown":
        values = obj.get("values") if isinstance(obj.get("values"), dict) else {}
        rec: dict[str, Any] = {"k": "tick", "ch": obj.get("channel"), "shown": True, "live": obj.get("live"),
                               "values": values}
        if "speed_mph" in values and values.get("status") == "accelerating":
            rec["speed"] = values["speed_mph"]
        out = [rec]
    elif typ in ("event", "tick", "presence", "message"):
        rec = push_record(obj)
        if typ == "event":
            rec["replayed"] = bool(obj.get("replayed"))
        out = [rec]
    elif typ == "sync":
        out = [{"k": "sync", "ch": obj.get("channel"), "seq": obj.get("seq"), "method": obj.get("method")}]
    elif typ == "connection":
        state = obj.get("state")
        reason = obj.get("reason_code") or obj.get("reason")
        out = [{"k": "up", "state": state, "reason": reason} if state in ("connected", "ready", "recovered")
               else {"k": "down", "state": state, "reason": reason}]
    elif typ in ("link", "freshness"):
        ch = obj.get("channel") if typ == "freshness" else None
        if obj.get("live") is False:
            age = obj.get("age_ms")
            out = [{"k": "stale", "ch": ch, "age_s": age / 1000 if isinstance(age, (int, float)) else None,
                    "why": obj.get("why")}]
        else:
            out = [{"k": "fresh", "ch": ch}]
    elif typ == "bye":
        out = [{"k": "bye", "reason": obj.get("reason")}]
    else:
        out = [{"k": "other", "type": typ}]
    for o in out:
        o["_t"], o["_wall"] = obj.get("_t"), obj.get("_wall")
    return out


class Watch:
    """`outatime watch --json` in the client namespace, its lines observed."""

    def __init__(self, run_: "Run", channels: list[str], name: str) -> None:
        self.jsonl = run_.watch_jsonl
        argv = run_.rig.ns(run_.rig.ns_cli, run_.args.cli, "watch", *channels,
                           "--jsonl" if self.jsonl else "--json", "--name", name, *run_.cli_conn())
        self.proc = Proc(f"watch {name}", argv, log_path=os.path.join(run_.folder, f"watch-{name}.err"))
        self.name = name

    def obs(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for rec in self.proc.lines.snapshot():
            if "raw" in rec:
                continue
            out.extend(watch_observations(rec))
        return out

    def stop(self) -> None:
        self.proc.stop()


# --------------------------------------------------------------------------
# Measuring: seq order, liveness, ticks
# --------------------------------------------------------------------------


class SeqCheck:
    """Gaps and duplicates in one client's seq order, per channel. A full
    state after missed events (a reload) is counted apart: nothing lost, but
    not the events either."""

    def __init__(self) -> None:
        self.last: dict[str, int] = {}
        self.gaps = self.dups = self.reloads = self.events = 0
        self.notes: list[str] = []

    def base(self, ch: str, seq: Any) -> None:
        if not isinstance(seq, int):
            return
        last = self.last.get(ch)
        if last is not None and seq > last:
            self.reloads += 1
            self.note(f"{ch}: a full state at seq {seq} after seq {last}")
        if last is None or seq > last:
            self.last[ch] = seq

    def event(self, ch: str, seq: Any) -> None:
        if not isinstance(seq, int):
            return
        self.events += 1
        last = self.last.get(ch)
        if last is not None and seq <= last:
            self.dups += 1
            self.note(f"{ch}: seq {seq} after {last}")
        elif last is not None and seq > last + 1:
            self.gaps += 1
            self.note(f"{ch}: seq {seq} after {last} (gap)")
        if last is None or seq > last:
            self.last[ch] = seq

    def note(self, text: str) -> None:
        if len(self.notes) < 6:
            self.notes.append(text)

    def summary(self) -> str:
        return f"gaps {self.gaps}, duplicates {self.dups}, reloads {self.reloads} ({self.events} events)"


def seq_of_python(records: list[dict[str, Any]]) -> SeqCheck:
    s = SeqCheck()
    for r in records:
        if r.get("k") == "sub":
            if r.get("recovered") is True:
                for seq in r.get("events") or []:
                    s.event(r["ch"], seq)
            else:
                s.base(r["ch"], r.get("seq"))
        elif r.get("k") == "event":
            s.event(r.get("ch"), r.get("seq"))
    return s


def seq_of_watch(obs: list[dict[str, Any]]) -> SeqCheck:
    s = SeqCheck()
    for o in obs:
        if o["k"] == "event":
            s.event(o.get("ch"), o.get("seq"))
        elif o["k"] == "sync" and o.get("method") in ("snapshot", "reloaded"):
            s.base(o.get("ch"), o.get("seq"))
    return s


def first_after(items: list[dict[str, Any]], t: float, pred: Callable[[dict[str, Any]], bool],
                tkey: str = "_t", until: Optional[float] = None) -> Optional[float]:
    for it in items:
        tt = it.get(tkey)
        if tt is None or tt < t or (until is not None and tt > until):
            continue
        if pred(it):
            return tt
    return None


def watch_live_at(obs: list[dict[str, Any]], t: float, channel: Optional[str] = None) -> bool:
    """Whether `watch` presents its board (or `channel`'s panel) as live at
    `t`: connected, and no stale mark standing on the board or that panel
    (any panel when `channel` is None). Today's watch has no marks:
    connected = live."""
    up = False
    stale: set[Any] = set()
    for o in obs:
        if o.get("_t") is None or o["_t"] > t:
            break
        if o["k"] == "up":
            up = True
        elif o["k"] == "down":
            up = False
        elif o["k"] == "stale":
            stale.add(o.get("ch"))
        elif o["k"] == "fresh":
            stale.discard(o.get("ch"))
            if o.get("ch") is None:
                stale.clear()
    if channel is not None:
        return up and None not in stale and channel not in stale
    return up and not stale


def wall_of(at: str) -> Optional[float]:
    """An ISO time with milliseconds (a timers tick's `at`) as epoch seconds."""
    try:
        import datetime as _dt
        return _dt.datetime.strptime(at.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()
    except (ValueError, AttributeError):
        return None


def countdown_dater(truth: list[dict[str, Any]], channel: str) -> Callable[[dict[str, Any]], Optional[float]]:
    """From the server side's ticks of `channel` (records with `at` and `r`
    = [id, remaining_s] of its first running timer): a function giving the
    wall time at which a `--jsonl` `shown` countdown was true (a running
    timer falls by exactly 1 a second, PROTOCOL §14.3), or None."""
    refs: dict[Any, tuple[float, int]] = {}
    for r in truth:
        if r.get("ch") == channel and r.get("k") == "tick" and r.get("r") and r.get("at"):
            ident, remaining = r["r"]
            at = wall_of(r["at"])
            if at is not None and isinstance(remaining, int):
                refs[ident] = (at, remaining)   # the latest: a pause would make older ones wrong

    def date(o: dict[str, Any]) -> Optional[float]:
        for row in (o.get("values") or {}).get("timers") or []:
            ref = refs.get(row.get("id"))
            if ref and row.get("status") == "running" and isinstance(row.get("remaining_s"), int):
                return ref[0] + (ref[1] - row["remaining_s"])
        return None
    return date


def stale_shown_as_live(obs: list[dict[str, Any]], t0: float, t1: float, channel: str,
                        limit_s: float = 2.0, step: float = 0.25,
                        truth: Optional[list[dict[str, Any]]] = None) -> tuple[float, float]:
    """Over [t0, t1], sampled every `step`: the age of the newest countdown
    values `watch` had for `channel` (now − the tick's `at`), counted while
    it presented them as live. Returns (max age shown as live, seconds with
    values older than `limit_s` shown as live)."""
    # The values shown: a tick's, as of its `at`, or a snapshot's (a sync), as
    # of its arrival (a lower bound on their age: no better time is known).
    date = countdown_dater(truth or [], channel)
    ticks = []
    for o in obs:
        if o.get("ch") != channel:
            continue
        if o["k"] == "tick" and o.get("at"):
            ticks.append((o["_t"], o["_wall"], wall_of(o["at"])))
        elif o["k"] == "tick" and o.get("shown"):
            when = date(o)
            if when is not None:
                ticks.append((o["_t"], o["_wall"], when))
        elif o["k"] == "sync":
            ticks.append((o["_t"], o["_wall"], o["_wall"]))
    offset = next((o["_wall"] - o["_t"] for o in obs if o.get("_t") is not None), time.time() - time.monotonic())
    worst, over = 0.0, 0.0
    t = t0
    while t <= t1:
        latest = None
        for tt, _, at in ticks:
            if tt > t:
                break
            latest = at
        if latest is not None and watch_live_at(obs, t, channel):
            age = (t + offset) - latest
            worst = max(worst, age)
            if age > limit_s:
                over += step
        t += step
    return worst, over


def pct(values: list[float], p: float) -> Optional[float]:
    if not values:
        return None
    v = sorted(values)
    k = min(len(v) - 1, max(0, int(round(p / 100.0 * (len(v) - 1)))))
    return v[k]


def fmt_s(v: Optional[float], none: str = "—") -> str:
    return none if v is None else f"{v:.1f} s"


def fmt_ms(v: Optional[float]) -> str:
    return "—" if v is None else f"{v * 1000:.0f} ms"


# --------------------------------------------------------------------------
# Results: figures and Must-reach checks
# --------------------------------------------------------------------------


@dataclass
class Check:
    scenario: str
    what: str            # the Must-reach item
    figure: str          # what was measured
    ok: Optional[bool]   # None: not decidable here (e.g. no baseline)
    today: str = ""      # the issue's "before" figure


@dataclass
class Outcome:
    checks: list[Check] = field(default_factory=list)
    figures: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, scenario: str, what: str, figure: str, ok: Optional[bool], today: str = "") -> None:
        self.checks.append(Check(scenario, what, figure, ok, today))
        mark = "PASS" if ok else ("FAIL" if ok is False else "—")
        log(f"  {mark:4}  {what}: {figure}")


# --------------------------------------------------------------------------
# A run: the rig, the server, the busy load, the observer
# --------------------------------------------------------------------------


def openssl(*args: str) -> None:
    r = subprocess.run(["openssl", *args], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args[:2])} failed: {r.stderr.strip()[:300]}")


class Run:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.folder = args.dir or tempfile.mkdtemp(prefix="outatime-wan-")
        os.makedirs(self.folder, exist_ok=True)
        self.rig = Rig()
        self.server: Optional[Proc] = None
        self.busy: Optional[Proc] = None
        self.observer: Optional[Proc] = None
        self.procs: list[Any] = []      # everything started, stopped at the end
        self.ca: Optional[str] = None
        self.out = Outcome()
        self.started = time.monotonic()
        self.cli_help_add = ""
        self.watch_jsonl = False
        self.baseline: Optional[dict[str, Any]] = None

    # ---- setting up ---------------------------------------------------------

    def certs(self) -> None:
        d = self.folder
        ca_key, ca = os.path.join(d, "ca.key"), os.path.join(d, "ca.pem")
        key, csr, cert, ext = (os.path.join(d, f"server{x}") for x in (".key", ".csr", ".pem", ".ext"))
        openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", ca_key)
        openssl("req", "-x509", "-new", "-key", ca_key, "-subj", "/CN=OutaTime WAN trials CA", "-days", "2",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
                "-out", ca)
        openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key)
        openssl("req", "-new", "-key", key, "-subj", "/CN=outatime-wan", "-out", csr)
        Path(ext).write_text(f"basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:{self.rig.server_ip}\n")
        openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-days", "2",
                "-extfile", ext, "-out", cert)
        self.ca, self.cert, self.key = ca, cert, key

    def start(self) -> None:
        self.rig.setup()
        log(f"rig: {self.rig.ns_srv} ({self.rig.server_ip}) ⇄ {self.rig.ns_mid} (bridge) ⇄ "
            f"{self.rig.ns_cli} ({self.rig.client_ip})")
        argv = [self.args.server, "--host", self.rig.server_ip, "--db", os.path.join(self.folder, "wan.sqlite"),
                "--allow-anonymous", "--log-level", "info", *self.args.server_arg]
        if self.args.plain:
            argv += ["--port", str(SERVER_PORT), "--allow-plaintext"]
        else:
            self.certs()
            argv += ["--tls-port", str(SERVER_PORT), "--tls-cert", self.cert, "--tls-key", self.key, "--no-plain"]
        self.server = Proc("server", self.rig.ns(self.rig.ns_srv, *argv), os.path.join(self.folder, "server.log"))
        self.procs.append(self.server)
        if not self.wait_listening(20):
            raise RuntimeError(f"the server did not listen within 20 s; its log: {self.tail('server.log')}")
        self.busy = self.agent("busy", self.rig.ns_srv)
        if self.busy.lines.wait(lambda r: r.get("k") == "ready", 60) is None:
            raise RuntimeError(f"the busy load did not start: {self.tail('agent-busy.err')}")
        self.observer = self.agent("client", self.rig.ns_srv, name="wan-observer", reconnect=True,
                                   channels=",".join(BUSY_CHANNELS), tag="observer")
        if self.observer.lines.wait(lambda r: r.get("k") == "sub" and r.get("ch") == BUSY_CHANNELS[-1], 30) is None:
            raise RuntimeError(f"the observer did not subscribe: {self.tail('agent-observer.err')}")
        r = subprocess.run([self.args.cli, "timers", "add", "--help"], capture_output=True, text=True, timeout=20)
        self.cli_help_add = r.stdout + r.stderr
        r = subprocess.run([self.args.cli, "watch", "--help"], capture_output=True, text=True, timeout=20)
        self.watch_jsonl = "--jsonl" in r.stdout and not self.args.watch_json
        log(f"watch read through {'--jsonl (stale marks, reasons)' if self.watch_jsonl else '--json (no stale marks)'}")
        log(f"server {'plain TCP' if self.args.plain else 'TLS'} on {self.rig.server_ip}:{SERVER_PORT}, busy "
            f"(a trip every 15 s, 5 countdowns, laps, dispatches); files in {self.folder}")

    def wait_listening(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.server and self.server.proc.poll() is not None:
                return False
            r = subprocess.run(self.rig.ns(self.rig.ns_srv, sys.executable, "-c",
                                           f"import socket; socket.create_connection(('{self.rig.server_ip}', {SERVER_PORT}), 1)"),
                               capture_output=True, timeout=10)
            if r.returncode == 0:
                return True
            time.sleep(0.3)
        return False

    def tail(self, name: str, n: int = 1500) -> str:
        try:
            return Path(self.folder, name).read_text()[-n:]
        except OSError:
            return "(no log)"

    def agent(self, role: str, ns: str, name: str = "wan-python", channels: Optional[str] = None,
              reconnect: bool = False, views: Optional[list[str]] = None, timeout: Optional[float] = None,
              tag: Optional[str] = None, extra: Optional[list[str]] = None) -> Proc:
        argv = [sys.executable, SCRIPT, "_agent", role, "--host", self.rig.server_ip, "--port", str(SERVER_PORT),
                "--name", name]
        if self.ca and not self.args.plain:
            argv += ["--ca", self.ca]
        if channels:
            argv += ["--channels", channels]
        if reconnect:
            argv.append("--reconnect")
        else:
            argv.append("--stay")
        for v in views or []:
            argv += ["--view", v]
        if timeout is not None:
            argv += ["--timeout", str(timeout)]
        argv += extra or []
        label = tag or role
        p = Proc(f"agent {label}", self.rig.ns(ns, *argv), os.path.join(self.folder, f"agent-{label}.err"), stdin=True)
        self.procs.append(p)
        return p

    def query(self, what: str = "get", channel: str = "") -> dict[str, Any]:
        p = self.agent("query", self.rig.ns_srv, channels=channel, extra=["--query", what], tag="query")
        rec = p.lines.wait(lambda r: r.get("k") == "result", 30)
        p.stop()
        self.procs.remove(p)
        if rec is None:
            raise RuntimeError(f"query {what} {channel} failed: {self.tail('agent-query.err', 600)}")
        return rec["result"]

    def cli_conn(self) -> list[str]:
        conn = ["--host", self.rig.server_ip, "--port", str(SERVER_PORT)]
        return conn if self.args.plain else conn + ["--ca", str(self.ca)]

    def oneshot(self, *argv: str, timeout: float = 4.0) -> subprocess.Popen:
        """`outatime ARGV --timeout T` in the client namespace."""
        full = self.rig.ns(self.rig.ns_cli, self.args.cli, *argv, "--timeout", f"{timeout:g}", *self.cli_conn())
        return subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)

    def stop_all(self) -> None:
        for p in reversed(self.procs):
            try:
                p.stop()
                self.keep(p)
            except Exception:   # noqa: BLE001 — keep stopping the others
                pass
        self.procs = []
        self.rig.teardown()

    def budget_left(self) -> float:
        return self.args.budget_s - (time.monotonic() - self.started)

    def client_pair(self, channels: list[str], label: str, watch: bool = True,
                    timeout: Optional[float] = None) -> tuple[Optional[Watch], Proc]:
        """`watch` and the Python client (reconnecting) in the client namespace."""
        w = None
        if watch:
            w = Watch(self, channels, f"wan-watch-{label}")
            self.procs.append(w)
        py = self.agent("client", self.rig.ns_cli, name=f"wan-python-{label}", channels=",".join(channels),
                        reconnect=True, timeout=timeout, tag=f"python-{label}")
        return w, py

    def warm(self, w: Optional[Watch], py: Proc, timeout: float = 30.0) -> bool:
        """Until both clients have seen a tick."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            w_ok = w is None or any(o["k"] == "tick" for o in w.obs())
            p_ok = any(r.get("k") == "tick" for r in py.records())
            if w_ok and p_ok:
                return True
            time.sleep(0.2)
        return False

    def release(self, *things: Any) -> None:
        for x in things:
            if x is None:
                continue
            x.stop()
            self.keep(x)
            if x in self.procs:
                self.procs.remove(x)

    def keep(self, x: Any) -> None:
        """A stopped process's records, one JSON object a line, in the run's folder."""
        proc = x.proc if isinstance(x, Watch) else x
        name = re.sub(r"[^A-Za-z0-9_.-]+", "-", proc.name)
        try:
            with open(os.path.join(self.folder, f"{name}-{int(proc.started)}.jsonl"), "w") as fh:
                for rec in proc.lines.snapshot():
                    fh.write(json.dumps(rec) + "\n")
        except OSError:
            pass


# --------------------------------------------------------------------------
# Scenarios
# --------------------------------------------------------------------------

CUT_PROFILE = {"delay_ms": 40, "jitter_ms": 0, "loss": 0.0}        # 80 ms RTT, for the cut scenarios
HEALTHY_PROFILE = {"delay_ms": 40, "jitter_ms": 5, "loss": 0.01}   # 80 ms RTT, 1 % loss


def python_detect(records: list[dict[str, Any]], t_cut: float, until: float) -> Optional[float]:
    """When the Python client raised (a failure record) or reconnected by itself after `t_cut`."""
    t = first_after(records, t_cut, lambda r: r.get("k") == "fail" or (r.get("k") == "hello" and r.get("inner")),
                    tkey="t", until=until)
    return None if t is None else t - t_cut


def scenario_blackhole(run_: Run) -> None:
    a = run_.args
    cut_s, after_s = a.blackhole_s, a.after_s
    run_.rig.set_profile(**CUT_PROFILE)
    w, py = run_.client_pair(list(BUSY_CHANNELS), "bh")
    if not run_.warm(w, py):
        run_.out.add("blackhole", "clients ready", "no tick within 30 s", False)
        run_.release(w, py)
        return
    time.sleep(3)
    t_cut = time.monotonic()
    run_.rig.blackhole(True)
    log(f"blackhole: {cut_s:.0f} s, from now")
    time.sleep(cut_s)
    t_back = time.monotonic()
    run_.rig.blackhole(False)
    log(f"blackhole: path back; watching for {after_s:.0f} s")
    time.sleep(after_s)
    obs, recs = w.obs(), py.records()
    run_.release(w, py)
    end = t_back + after_s
    stale = first_after(obs, t_cut, lambda o: o["k"] in ("down", "stale"), until=end)
    # Frozen but presented as live: from the cut until watch says so, or shows new data.
    live_again = None
    for o in obs:
        if o.get("_t", 0) >= t_back and o["k"] == "tick" and watch_live_at(obs, o["_t"]):
            live_again = o["_t"]
            break
    fresh_any = first_after(obs, t_cut + 0.5, lambda o: o["k"] == "tick", until=end)
    frozen_live = (min(x for x in (stale, fresh_any, end) if x is not None) - t_cut)
    downs = [o for o in obs if o["k"] == "down" and o["_t"] >= t_cut]
    reasons = sorted({str(o.get("reason") or o.get("state")) for o in downs})
    py_detect = python_detect(recs, t_cut, end)
    py_live = first_after(recs, t_back, lambda r: r.get("k") == "tick", tkey="t", until=end)
    sw, sp = seq_of_watch(obs), seq_of_python(recs)
    fails = [r for r in recs if r.get("k") == "fail" and r["t"] >= t_cut]
    f = run_.out.figures.setdefault("blackhole", {})
    f.update(cut_s=cut_s, watch_stale_s=None if stale is None else round(stale - t_cut, 1),
             watch_frozen_as_live_s=round(frozen_live, 1),
             watch_live_after_return_s=None if live_again is None else round(live_again - t_back, 1),
             watch_states=reasons, python_detect_s=None if py_detect is None else round(py_detect, 1),
             python_failure=fails[0]["msg"][:120] if fails else None,
             python_live_after_return_s=None if py_live is None else round(py_live - t_back, 1),
             watch_seq=sw.summary(), python_seq=sp.summary())
    log(f"blackhole figures: {json.dumps(f)}")
    run_.out.add("blackhole", "watch marks the board stale within 2 s of the cut",
                 f"{fmt_s(None if stale is None else stale - t_cut, 'never')} (frozen values shown as live for "
                 f"{frozen_live:.1f} s; states {', '.join(reasons) or 'none'})",
                 stale is not None and stale - t_cut <= 2.0, "31–34 s frozen, 'recovered'")
    run_.out.add("blackhole", "watch shows live data within 3 s after the path returns",
                 fmt_s(None if live_again is None else live_again - t_back, f"not within {after_s:.0f} s"),
                 live_again is not None and live_again - t_back <= 3.0, "11–13.5 s")
    run_.out.add("blackhole", "the Python client raises or reconnects within 5 s of the cut",
                 fmt_s(py_detect, f"not within {cut_s + after_s:.0f} s")
                 + (f" ({fails[0]['code']})" if fails else ""),
                 py_detect is not None and py_detect <= 5.0, "nothing for 94 s (90 s outage)")
    run_.out.add("blackhole", "no gap, no duplicate (watch, Python)", f"watch {sw.summary()}; Python {sp.summary()}",
                 sw.gaps + sw.dups + sp.gaps + sp.dups == 0)


def watchers_timeline(records: list[dict[str, Any]], ch: str) -> list[tuple[float, dict[str, str]]]:
    """The observer's watcher list of `ch` over time: (t, {session: name})."""
    cur: dict[str, str] = {}
    out: list[tuple[float, dict[str, str]]] = []
    for r in records:
        if r.get("ch") != ch:
            continue
        if r.get("k") == "sub":
            cur = {s: n for s, n in r.get("watchers") or []}
        elif r.get("k") == "presence":
            for s, _ in r.get("left") or []:
                cur.pop(s, None)
            for s, n in r.get("joined") or []:
                cur[s] = n
        else:
            continue
        out.append((r["t"], dict(cur)))
    return out


def listed_twice(timeline: list[tuple[float, dict[str, str]]], prefix: str, end: float) -> tuple[int, float]:
    """How often, and for how long in all, a name starting with `prefix`
    was listed under two sessions at once."""
    times, total, since = 0, 0.0, None
    for t, cur in timeline:
        names = [n for n in cur.values() if n and n.startswith(prefix)]
        twice = len(names) != len(set(names))
        if twice and since is None:
            since = t
            times += 1
        elif not twice and since is not None:
            total += t - since
            since = None
    if since is not None:
        total += end - since
    return times, total


def scenario_ghost(run_: Run) -> None:
    a = run_.args
    ch = "timers/wan-ghost"
    run_.rig.set_profile(**CUT_PROFILE)
    p = run_.oneshot("timers", "add", ch, "--event", "ghost", "--in", "10h", timeout=10)
    out, err = p.communicate(timeout=30)
    ident = 1
    try:
        ident = int(run_.query("get", ch)["state"]["timers"][0]["id"])
    except (KeyError, IndexError, RuntimeError, TypeError):
        run_.out.add("ghost", "set-up", f"no timer in {ch}: {err.strip()[:200]}", False)
        return
    obs_p = run_.agent("client", run_.rig.ns_srv, name="wan-ghost-observer", channels=ch, reconnect=True, tag="ghost-observer")
    if obs_p.lines.wait(lambda r: r.get("k") == "sub", 30) is None:
        run_.out.add("ghost", "set-up", "the ghost observer did not subscribe", False)
        run_.release(obs_p)
        return
    ghost = run_.agent("client", run_.rig.ns_cli, name="wan-ghost-python", channels=ch, views=[f"{ch}:{ident}"],
                       tag="ghost-python")
    w = Watch(run_, [ch], "wan-ghost-watch")
    run_.procs.append(w)
    got = ghost.lines.wait(lambda r: r.get("k") == "viewing", 30)
    hello = ghost.lines.wait(lambda r: r.get("k") == "hello", 1)
    time.sleep(4)
    recs = obs_p.records()
    wsess = [s for _, cur in watchers_timeline(recs, ch)[-1:] for s, n in cur.items() if n == "wan-ghost-watch"]
    if got is None or hello is None or not wsess:
        run_.out.add("ghost", "set-up", f"the ghost viewer or watch did not join ({got}, {wsess})", False)
        run_.release(ghost, w, obs_p)
        return
    py_session, w_session = hello["session"], wsess[0]
    results: list[dict[str, Any]] = []
    for n, (cut_s, after_s) in enumerate(((a.ghost_s, 25.0), (a.ghost_short_s, 25.0))):
        mark = obs_p.lines.count()
        t_cut = time.monotonic()
        run_.rig.blackhole(True)
        log(f"ghost: blackhole {cut_s:.0f} s")
        time.sleep(cut_s)
        t_back = time.monotonic()
        run_.rig.blackhole(False)
        time.sleep(after_s)
        recs = obs_p.records()
        new = recs[mark:]

        def left(session: str) -> Optional[float]:
            t = first_after(new, t_cut, lambda r: r.get("k") == "presence" and any(s == session for s, _ in r.get("left") or []),
                            tkey="t")
            return None if t is None else t - t_cut
        stopped = first_after(new, t_cut, lambda r: r.get("k") == "event" and r.get("ev") in ("timer_stopped", "timer_finished"),
                              tkey="t")
        twice, twice_s = listed_twice(watchers_timeline(recs, ch)[-200:], "wan-ghost-", t_back + after_s)
        results.append({"cut_s": cut_s, "python_left_s": left(py_session), "watch_left_s": left(w_session),
                        "timer_stopped_s": None if stopped is None else stopped - t_cut,
                        "listed_twice": twice, "listed_twice_s": round(twice_s, 1)})
        log(f"ghost cut {n + 1}: {results[-1]}")
        # The next cut needs watchers again: the watch reconnects by itself; the Python ghost is gone for good.
        cur = watchers_timeline(recs, ch)[-1][1] if watchers_timeline(recs, ch) else {}
        w_now = [s for s, nm in cur.items() if nm == "wan-ghost-watch"]
        if w_now:
            w_session = w_now[-1]
        py_session = py_session if any(s == py_session for s in cur) else ""
    run_.release(ghost, w, obs_p)
    long_ = results[0]
    f = run_.out.figures.setdefault("ghost", {})
    f.update(cuts=results)
    worst = max([x for x in (long_["python_left_s"], long_["watch_left_s"], long_["timer_stopped_s"]) if x is not None]
                or [0.0])
    missing = [k for k in ("python_left_s", "watch_left_s", "timer_stopped_s") if long_[k] is None]
    run_.out.add("ghost", "ghost watchers and timer viewers gone within 10 s of a cut",
                 f"Python viewer left {fmt_s(long_['python_left_s'], 'never')}, watch left "
                 f"{fmt_s(long_['watch_left_s'], 'never')}, its timer stopped {fmt_s(long_['timer_stopped_s'], 'never')} "
                 f"after the cut ({long_['cut_s']:.0f} s blackhole)",
                 not missing and worst <= 10.0, "27–34 s")
    twice = sum(r["listed_twice"] for r in results)
    run_.out.add("ghost", "no session listed twice after a reconnect",
                 f"{twice} times ({sum(r['listed_twice_s'] for r in results):.1f} s in all) over "
                 f"{len(results)} cuts", twice == 0, "~1 s, old and new session both listed")


def cli_has_key_flag(help_text: str) -> Optional[str]:
    """The one-shot's idempotency-key flag, when `outatime timers add --help` has one."""
    return "--idempotency-key" if re.search(r"--idempotency-key\b", help_text) else None


def scenario_oneshots(run_: Run) -> None:
    a = run_.args
    ch = f"timers/wan-os-{run_.rig.tag}"
    key_flag = cli_has_key_flag(run_.cli_help_add)
    run_.rig.set_profile(**CUT_PROFILE)
    pending = list(range(1, a.oneshots + 1))
    attempts: dict[int, list[tuple[int, str, str]]] = collections.defaultdict(list)   # i -> (status, event, first line)
    done: set[int] = set()
    rounds = 0
    rng = random.Random(a.seed)
    # Cut mid-request: when the server has applied the first command of a
    # round (an observer on the server's side sees its event), so that its
    # reply, and the others' requests or replies, meet the cut.
    watcher = run_.agent("client", run_.rig.ns_srv, name="wan-os-observer", channels=ch, reconnect=True, tag="os-observer")
    watcher.lines.wait(lambda r: r.get("k") == "sub", 30)
    cut_late = 0
    while pending and rounds < 40 and run_.budget_left() > 30:
        rounds += 1
        batch, pending = pending[:10], pending[10:]
        procs = []
        unsure: list[int] = []
        mark = watcher.lines.count()
        for i in batch:
            n = len(attempts[i]) + 1
            # One name per attempt, also with a key (a repeat is answered with the first outcome and the
            # arguments are not compared, PROTOCOL §6.9): the stored name tells which attempt was applied.
            event = f"os-{i}-try{n}"
            extra = [key_flag, f"wan-{run_.rig.tag}-{i}"] if key_flag else []
            procs.append((i, event, run_.oneshot("timers", "add", ch, "--event", event, "--in", "10h", *extra,
                                                 timeout=a.oneshot_timeout)))
        cut = rounds <= (a.oneshots // 10) + 4   # the last rounds, if any, without a cut: let retries through
        if cut:
            seen = watcher.lines.wait(lambda r: r.get("k") == "event" and r.get("ev") == "timer_added", 20, start=mark)
            if seen is None:
                cut_late += 1
            kind = "blackhole" if rounds % 2 else "link"
            if kind == "blackhole":
                run_.rig.blackhole(True)
            else:
                run_.rig.set_link(False)
            time.sleep(rng.uniform(3.0, 6.0))
            run_.rig.heal()
        for i, event, p in procs:
            try:
                _, err = p.communicate(timeout=a.oneshot_timeout + 30)
            except subprocess.TimeoutExpired:
                p.kill()
                _, err = p.communicate()
            first = (err.strip().splitlines() or [""])[0][:160]
            attempts[i].append((p.returncode, event, first))
            if p.returncode in (0, EXIT_REFUSED, EXIT_USAGE) or len(attempts[i]) >= 6:
                done.add(i)
            elif p.returncode == EXIT_UNREACHABLE:
                pending.append(i)    # "not reached": a script retries
            else:
                unsure.append(i)     # "outcome unknown": a careful script looks first
        if unsure:
            have = {t.get("event") for t in (run_.query("get", ch).get("state") or {}).get("timers") or []}
            for i in unsure:
                if any((e or "").startswith(f"os-{i}-try") for e in have):
                    done.add(i)
                else:
                    pending.append(i)
        log(f"one-shots: round {rounds}{' (cut)' if cut else ''}: statuses "
            f"{[attempts[i][-1][0] for i, _, _ in procs]}")
    run_.release(watcher)
    state = run_.query("get", ch).get("state") or {}
    timers = state.get("timers") or []
    by_event = collections.Counter(t.get("event") for t in timers)
    applied_items = {int(e.split("-")[1]) for e in by_event if e and e.startswith("os-")}
    lies, statuses, unknown = [], collections.Counter(), 0
    for i, tries in attempts.items():
        for status, event, first in tries:
            statuses[status] += 1
            applied = by_event.get(event, 0) > 0
            if status not in (0, EXIT_REFUSED, EXIT_UNREACHABLE, EXIT_USAGE):
                unknown += 1
            if key_flag and status == 0:
                # A retry with the item's key: its success may be the repeat of an earlier attempt's.
                mine = sum(n for e, n in by_event.items() if (e or "").startswith(f"os-{i}-try"))
                if mine != 1:
                    lies.append((i, status, f"exit 0, {mine} timers for the key"))
                continue
            if status == 0 and by_event.get(event, 0) != 1:
                lies.append((i, status, f"exit 0, {by_event.get(event, 0)} timers"))
            elif status in (EXIT_UNREACHABLE, EXIT_REFUSED) and applied:
                lies.append((i, status, f"'{first}' but the timer was added"))
    f = run_.out.figures.setdefault("oneshots", {})
    f.update(commands=a.oneshots, attempts=sum(len(x) for x in attempts.values()), rounds=rounds,
             statuses={str(k): v for k, v in sorted(statuses.items())}, timers_after=len(timers),
             items_with_a_timer=len(applied_items), duplicates=len(timers) - len(applied_items),
             untruthful=len(lies), unknown_outcome_exits=unknown, key_flag=key_flag, rounds_without_an_applied_command=cut_late,
             examples=[f"#{i}: exit {s}: {why}" for i, s, why in lies[:4]])
    log(f"one-shots figures: {json.dumps(f)}")
    run_.out.add("oneshots", f"{a.oneshots} one-shot `timers add` with cuts, retried: exactly {a.oneshots} timers",
                 f"{len(timers)} timers ({len(applied_items)} distinct, {len(timers) - len(applied_items)} duplicates) "
                 f"after {f['attempts']} runs; exits {f['statuses']}",
                 len(timers) == a.oneshots and len(applied_items) == a.oneshots, "duplicates: 5 of 5 timeouts were added")
    if statuses.get(EXIT_USAGE):
        run_.out.add("oneshots", "the one-shot command line", f"{statuses[EXIT_USAGE]} usage errors (exit 64): "
                     f"{next(t[2] for x in attempts.values() for t in x if t[0] == EXIT_USAGE)}", False)
    run_.out.add("oneshots", "every exit status tells the truth",
                 f"{len(lies)} untruthful" + (f", e.g. {f['examples'][0]}" if lies else "")
                 + (f"; {unknown} 'outcome unknown' exits" if unknown else ""),
                 not lies, "exit 3 'no reply in time' and the timer added: 5 of 5")


def scenario_flood(run_: Run) -> None:
    a = run_.args
    run_.rig.set_profile(**CUT_PROFILE)
    run_.rig.cap(a.rate)
    before = run_.query("stats").get("slow_consumer_closes", 0)
    w, py = run_.client_pair(list(BUSY_CHANNELS), "flood")
    run_.warm(w, py)
    flood = run_.agent("flood", run_.rig.ns_srv, channels="delorean/wan", tag="flood",
                       extra=["--rate", str(a.flood_rate), "--size", str(a.flood_size)])
    flood.lines.wait(lambda r: r.get("k") == "ready", 20)
    t0 = time.monotonic()
    log(f"flood: {a.flood_rate:g} messages/s × {a.flood_size} B on delorean/wan over {a.rate}, {a.flood_s:.0f} s")
    time.sleep(a.flood_s)
    flood.send(cmd="quit")
    fin = flood.lines.wait(lambda r: r.get("final"), 10)
    t1 = time.monotonic()
    time.sleep(8)
    obs, recs = w.obs(), py.records()
    run_.release(flood, w, py)
    run_.rig.cap(None)
    after = run_.query("stats").get("slow_consumer_closes", 0)
    closes = (after or 0) - (before or 0)
    published = (fin or {}).get("n") or max([r.get("n", 0) for r in flood.records("flood")] or [0])
    w_downs = [o for o in obs if o["k"] == "down" and o["_t"] >= t0 and o.get("state") != "connecting"]
    w_told = [o for o in obs if (o["k"] in ("down", "bye") and "slow" in str(o.get("reason") or ""))]
    w_reconnects = len([o for o in obs if o["k"] == "up" and o["_t"] >= t0])
    py_fails = [r for r in recs if r.get("k") == "fail" and r["t"] >= t0]
    py_told = [r for r in recs if (r.get("k") == "bye" and r.get("reason") == "slow_consumer")
               or (r.get("k") == "fail" and r.get("code") == "slow_consumer")]
    py_byes = len([r for r in py_fails if r.get("code") == "slow_consumer"])
    got = {r.get("n") for r in recs if r.get("k") == "message" and r.get("ch") == "delorean/wan"}
    # Lost: a hole below the highest number received (the rest may still be on the 1 Mbit way).
    top = max([n for n in got if isinstance(n, int)] or [0])
    lost = top - len([n for n in got if isinstance(n, int)])
    notices = [r for r in recs if r.get("k") not in ("event", "tick", "message", "presence", "hello", "sub", "fail", "bye",
                                                         "error", "viewing")]
    reported = sum(int((n.get("push") or {}).get("messages") or 0) for n in notices
                   if isinstance((n.get("push") or {}).get("messages"), int))
    worst, over = stale_shown_as_live(obs, t0, t1, "timers/wan", truth=run_.observer.records() if run_.observer else None)
    learned = len({round(o["_t"]) for o in w_told}) + py_byes
    f = run_.out.figures.setdefault("flood", {})
    f.update(rate=a.rate, published=published, slow_consumer_closes=closes, watch_reconnects=w_reconnects,
             watch_closes_seen=len(w_downs), watch_told_why=len(w_told), python_failures=len(py_fails),
             python_told_slow_consumer=len(py_told), python_messages_lost=lost, python_messages_received=len(got),
             python_highest_received=top,
             python_notices=[str(n.get("push") or n.get("k"))[:80] for n in notices[:3]],
             python_drops_reported=reported, python_notice_count=len(notices),
             watch_max_age_shown_live_s=round(worst, 1), watch_s_over_2s_shown_live=round(over, 1))
    log(f"flood figures: {json.dumps(f)}")
    run_.out.add("flood", "a slow consumer learns why it was closed in ≥ 95 % of closes",
                 f"{learned} of {closes} server-side slow_consumer closes learned (watch told {len(w_told)}, "
                 f"saw {len(w_downs)} disconnects; Python {len(py_told)} of {len(py_fails)} failures)",
                 closes == 0 or learned >= 0.95 * closes, "0 of 6")
    run_.out.add("flood", "watch never shows values older than 2 s as live",
                 f"oldest countdown shown as live {worst:.1f} s; {over:.1f} s with values > 2 s old shown as live",
                 over == 0, "froze 16 s saying 'connected'")
    run_.out.add("flood", "messages dropped for the Python client are reported, never silent",
                 f"lost {lost} of the first {top} (of {published} sent); told: "
                 + (f"{len(notices)} notices counting {reported} dropped" if notices else ("bye" if py_told else "no")),
                 lost == 0 or bool(notices or py_told), "lost 12,897 of 15,001 with no notice")


def scenario_bigtimers(run_: Run) -> None:
    a = run_.args
    ch = "timers/wan-big"
    run_.rig.set_profile(**CUT_PROFILE)
    assert run_.busy is not None
    mark = run_.busy.lines.count()
    run_.busy.send(cmd="big", n=a.big_timers)
    log(f"bigtimers: making {a.big_timers} running timers in {ch} (over the server's loopback)")
    made = run_.busy.lines.wait(lambda r: r.get("k") == "big", 300, start=mark)
    if made is None:
        run_.out.add("bigtimers", "set-up", "the big list was not made within 300 s", False)
        return
    log(f"bigtimers: {made}")
    big_obs = run_.agent("client", run_.rig.ns_srv, name="wan-big-observer", channels=ch, reconnect=True,
                         tag="big-observer")
    big_obs.lines.wait(lambda r: r.get("k") == "sub", 60)
    run_.rig.cap(a.rate)
    t0 = time.monotonic()
    w, py = run_.client_pair([ch], "big")
    time.sleep(a.big_s)
    obs, recs, truth = w.obs(), py.records(), big_obs.records()
    run_.release(w, py, big_obs)
    run_.rig.cap(None)
    run_.busy.send(cmd="bigstop")
    run_.busy.lines.wait(lambda r: r.get("k") == "bigstopped", 60, start=mark)
    subbed = first_after(recs, t0, lambda r: r.get("k") == "sub" and r.get("ch") == ch, tkey="t")
    fails = [r for r in recs if r.get("k") == "fail"]
    ticks = [o["_t"] for o in obs if o["k"] == "tick" and o.get("ch") == ch]
    gaps = [b - x for x, b in zip(ticks, ticks[1:])]
    worst, over = stale_shown_as_live(obs, t0, t0 + a.big_s, ch, truth=truth)
    f = run_.out.figures.setdefault("bigtimers", {})
    f.update(timers=made.get("timers"), running=made.get("running"), rate=a.rate,
             python_subscribed_s=None if subbed is None else round(subbed - t0, 1), python_failures=len(fails),
             python_failure=fails[0]["msg"][:140] if fails else None,
             watch_updates=len(ticks), watch_update_p50_s=None if not gaps else round(statistics.median(gaps), 2),
             watch_update_max_s=None if not gaps else round(max(gaps), 2),
             watch_max_age_shown_live_s=round(worst, 1), watch_s_over_2s_shown_live=round(over, 1))
    log(f"bigtimers figures: {json.dumps(f)}")
    run_.out.add("bigtimers", f"the Python client subscribes to a {made.get('timers')}-timer list ({a.rate})",
                 (f"subscribed after {subbed - t0:.1f} s" if subbed else f"never in {a.big_s:.0f} s")
                 + (f", {len(fails)} failures ({fails[0]['msg'][:90]})" if fails else ""),
                 subbed is not None, "never: 'the body of a 634,062-byte frame did not arrive within 5 s'")
    run_.out.add("bigtimers", "watch never shows values older than 2 s as live (countdowns)",
                 f"updates every {fmt_s(f['watch_update_p50_s'])} (p50), at most {fmt_s(f['watch_update_max_s'])}; "
                 f"oldest shown as live {worst:.1f} s, {over:.1f} s over 2 s", over == 0,
                 "updates every 1.5–4 s under 'connected'")


def scenario_cuts(run_: Run) -> None:
    a = run_.args
    run_.rig.set_profile(**CUT_PROFILE)
    w, py = run_.client_pair(list(BUSY_CHANNELS), "cuts")
    run_.warm(w, py)
    plan = [(kind, (3.0, 8.0)[i % 2]) for i in range(a.cuts) for kind in ("blackhole", "link")]
    done = collections.Counter()
    for n, (kind, length) in enumerate(plan):
        if run_.budget_left() < length + 30:
            log(f"cuts: budget spent after {n} cuts")
            break
        if kind == "blackhole":
            run_.rig.blackhole(True)
        else:
            run_.rig.set_link(False)
        time.sleep(length)
        run_.rig.heal()
        done[kind] += 1
        # Until both have data again (bounded), then a pause.
        t_back = time.monotonic()
        deadline = t_back + a.cut_settle_s
        while time.monotonic() < deadline:
            if (any(o["k"] == "tick" and o["_t"] > t_back for o in w.obs()[-50:])
                    and any(r.get("k") == "tick" and r["t"] > t_back for r in py.records()[-50:])):
                break
            time.sleep(0.25)
        time.sleep(a.cut_gap_s)
        if (n + 1) % 4 == 0:
            log(f"cuts: {n + 1} of {len(plan)} done")
    time.sleep(3)
    obs, recs = w.obs(), py.records()
    run_.release(w, py)
    sw, sp = seq_of_watch(obs), seq_of_python(recs)
    w_rec = len([o for o in obs if o["k"] == "up"]) - 1
    p_rec = len([r for r in recs if r.get("k") == "hello"]) - 1
    f = run_.out.figures.setdefault("cuts", {})
    f.update(blackholes=done["blackhole"], link_downs=done["link"], watch_seq=sw.summary(), python_seq=sp.summary(),
             watch_reconnects=w_rec, python_reconnects=p_rec, notes=(sw.notes + sp.notes)[:6])
    log(f"cuts figures: {json.dumps(f)}")
    run_.out.add("cuts", f"{done['blackhole']} blackholes + {done['link']} link-downs: 0 gaps, 0 duplicates (watch)",
                 f"{sw.summary()}; {w_rec} reconnects", sw.gaps == 0 and sw.dups == 0, "0 over 16 reconnects")
    run_.out.add("cuts", "… and 0 gaps, 0 duplicates (Python client)", f"{sp.summary()}; {p_rec} reconnects",
                 sp.gaps == 0 and sp.dups == 0)


def tick_delays(observer: list[dict[str, Any]], recs: list[dict[str, Any]], t0: float, t1: float,
                tkey: str, laps: bool = True) -> tuple[list[float], int, int]:
    """Tick delays: each tick as the client got it minus as the observer
    (server side, no link) got it, matched by content: a DeLorean tick by
    (trip, speed), a lap tick by its total time. Returns (delays, ticks the
    observer got in [t0, t1 - 2 s], how many of those the client missed)."""
    def index(rs: list[dict[str, Any]], key: str) -> dict[tuple[Any, ...], float]:
        trip, out = None, {}
        for r in rs:
            ch = r.get("ch")
            if ch == "delorean/wan":
                if r.get("k") == "event" and r.get("ev") == "acceleration_started":
                    trip = r.get("seq")
                elif r.get("k") in ("sub", "sync") and r.get("recovered") is not True and r.get("method") != "recovered":
                    # A snapshot taken mid-trip: nothing but the trip's start can have come since it
                    # began (set_destination is refused while accelerating), so its seq is the trip's.
                    trip = r.get("seq")
                elif r.get("k") == "tick" and trip is not None and r.get(key) is not None:
                    out.setdefault(("d", trip, r.get("speed")), r[key])
            elif laps and ch == "laps/wan" and r.get("k") == "tick" and r.get(key) is not None:
                out.setdefault(("l", r.get("lap_ms")), r[key])
        return out
    base, got = index(observer, "t"), index(recs, tkey)
    expected = [k for k, t in base.items() if t0 <= t <= t1 - 2.0]
    missing = [k for k in expected if k not in got]
    delays = [got[k] - base[k] for k in expected if k in got]
    return delays, len(expected), len(missing)


def scenario_healthy(run_: Run) -> None:
    a = run_.args
    run_.rig.set_profile(**HEALTHY_PROFILE)
    w, py = run_.client_pair(list(BUSY_CHANNELS), "healthy")
    run_.warm(w, py)
    assert run_.observer is not None
    t0 = time.monotonic()
    time.sleep(a.healthy_s)
    t1 = time.monotonic()
    obs, recs = w.obs(), py.records()
    run_.release(w, py)
    ob = run_.observer.records()
    pd, p_exp, p_miss = tick_delays(ob, recs, t0, t1, "t")
    wobs = [dict(o, t=o["_t"]) for o in obs]
    # `--jsonl` shows lap times extrapolated (not the ticks' values): the DeLorean's speeds are matched.
    wd, w_exp, w_miss = tick_delays(ob, wobs, t0, t1, "t", laps=not w.jsonl)
    lat, statuses = [], collections.Counter()
    for i in range(a.latency_n):
        s = time.monotonic()
        p = run_.oneshot("timers", "add", "timers/wan-latency", "--event", f"lat-{i}", "--in", "10h", timeout=10)
        p.communicate(timeout=40)
        statuses[p.returncode] += 1
        if p.returncode == 0:
            lat.append(time.monotonic() - s)
    f = run_.out.figures.setdefault("healthy", {})
    f.update(profile="80 ms RTT (40 ms ± 5 ms each way), 1 % loss",
             python_tick_delay_p50_ms=None if not pd else round(statistics.median(pd) * 1000),
             python_tick_delay_p99_ms=None if not pd else round(pct(pd, 99) * 1000),
             python_ticks_missing=f"{p_miss} of {p_exp}",
             watch_tick_delay_p50_ms=None if not wd else round(statistics.median(wd) * 1000),
             watch_tick_delay_p99_ms=None if not wd else round(pct(wd, 99) * 1000),
             watch_ticks_missing=f"{w_miss} of {w_exp}",
             oneshot_p50_ms=None if not lat else round(statistics.median(lat) * 1000),
             oneshot_p99_ms=None if not lat else round(pct(lat, 99) * 1000),
             oneshot_statuses={str(k): v for k, v in statuses.items()})
    log(f"healthy figures: {json.dumps(f)}")
    base = run_.baseline.get("healthy", {}) if run_.baseline else {}

    def within(key: str) -> Optional[bool]:
        if not base.get(key) or f.get(key) is None:
            return None
        return f[key] <= base[key] * 1.05
    run_.out.add("healthy", "ticks arrive, none missing (80 ms RTT, 1 % loss)",
                 f"Python {f['python_ticks_missing']} missing, delay p50 {f['python_tick_delay_p50_ms']} ms, p99 "
                 f"{f['python_tick_delay_p99_ms']} ms; watch {f['watch_ticks_missing']} missing, p50 "
                 f"{f['watch_tick_delay_p50_ms']} ms, p99 {f['watch_tick_delay_p99_ms']} ms",
                 p_miss == 0 and w_miss == 0 and p_exp > 0, "+47 ms p50 (p99 138–220 ms), none missing")
    run_.out.add("healthy", "tick delay within 5 % of the baseline (p50, watch)",
                 f"{f['watch_tick_delay_p50_ms']} ms vs {base.get('watch_tick_delay_p50_ms', 'no baseline')}",
                 within("watch_tick_delay_p50_ms"))
    run_.out.add("healthy", "one-shot latency within 5 % of the baseline (p50)",
                 f"{f['oneshot_p50_ms']} ms (p99 {f['oneshot_p99_ms']} ms, {a.latency_n} runs, process start and "
                 f"TLS included) vs {base.get('oneshot_p50_ms', 'no baseline')}", within("oneshot_p50_ms"))


def scenario_short(run_: Run) -> None:
    """The short version for `make test` (tools/tests/test_wan_quick.py):
    one profile (80 ms RTT, 1 % loss) throughout and one blackhole
    (--short-cut-s, 15 s: long enough that a server which drops dead peers
    within 10 s does so while the path is still cut). Bounds are generous
    (the machine is shared); the Must-reach figures of the long scenarios
    are tighter."""
    a = run_.args
    ch = "timers/wan-short"
    run_.rig.set_profile(**HEALTHY_PROFILE)
    made = run_.query("command", ch)
    ident = int(made.get("id", 1))
    obs_p = run_.agent("client", run_.rig.ns_srv, name="wan-short-observer", channels=",".join((*BUSY_CHANNELS, ch)),
                       reconnect=True, tag="short-observer")
    obs_p.lines.wait(lambda r: r.get("k") == "sub" and r.get("ch") == ch, 30)
    ghost = run_.agent("client", run_.rig.ns_cli, name="wan-short-ghost", channels=ch, views=[f"{ch}:{ident}"],
                       tag="short-ghost")
    w, py = run_.client_pair([*BUSY_CHANNELS, ch], "short")
    ready = run_.warm(w, py) and ghost.lines.wait(lambda r: r.get("k") == "viewing", 30) is not None
    hello = ghost.lines.wait(lambda r: r.get("k") == "hello", 1)
    if not ready or hello is None:
        run_.out.add("short", "set-up", "the clients did not get going within 30 s", False)
        run_.release(ghost, w, py, obs_p)
        return
    t0 = time.monotonic()
    time.sleep(a.short_healthy_s)
    t1 = time.monotonic()
    run_.rig.blackhole(True)
    log(f"short: blackhole {a.short_cut_s:.0f} s")
    time.sleep(a.short_cut_s)
    t_back = time.monotonic()
    run_.rig.blackhole(False)
    time.sleep(a.short_after_s)
    end = time.monotonic()
    obs, recs, ob = w.obs(), py.records(), obs_p.records()
    run_.release(ghost, w, py, obs_p)
    pd, p_exp, p_miss = tick_delays(ob, recs, t0, t1, "t")
    wd, w_exp, w_miss = tick_delays(ob, [dict(o, t=o["_t"]) for o in obs], t0, t1, "t", laps=not w.jsonl)
    py_detect = python_detect(recs, t1, end)
    py_live = first_after(recs, t_back, lambda r: r.get("k") == "tick", tkey="t")
    w_down = first_after(obs, t1, lambda o: o["k"] in ("down", "stale"), until=end)
    w_live = next((o["_t"] for o in obs if o.get("_t", 0) >= t_back and o["k"] == "tick" and watch_live_at(obs, o["_t"])), None)
    left = first_after(ob, t1, lambda r: r.get("k") == "presence" and r.get("ch") == ch
                       and any(sess == hello["session"] for sess, _ in r.get("left") or []), tkey="t")
    stopped = first_after(ob, t1, lambda r: r.get("k") == "event" and r.get("ch") == ch
                          and r.get("ev") in ("timer_stopped", "timer_finished"), tkey="t")
    twice, twice_s = listed_twice(watchers_timeline(ob, ch), "wan-", end)
    sw, sp = seq_of_watch(obs), seq_of_python(recs)
    rel = lambda x, base: None if x is None else round(x - base, 1)   # noqa: E731
    f = run_.out.figures.setdefault("short", {})
    f.update(python_ticks_missing=f"{p_miss} of {p_exp}", watch_ticks_missing=f"{w_miss} of {w_exp}",
             python_detect_s=None if py_detect is None else round(py_detect, 1), python_live_after_return_s=rel(py_live, t_back),
             watch_stale_s=rel(w_down, t1), watch_live_after_return_s=rel(w_live, t_back),
             ghost_left_s=rel(left, t1), ghost_timer_stopped_s=rel(stopped, t1), listed_twice=twice,
             watch_seq=sw.summary(), python_seq=sp.summary(), notes=(sw.notes + sp.notes)[:4])
    log(f"short figures: {json.dumps(f)}")
    cut, back = a.short_cut_s, a.short_after_s
    run_.out.add("short", "80 ms RTT, 1 % loss: no tick missing (watch, Python)",
                 f"Python {f['python_ticks_missing']}, watch {f['watch_ticks_missing']}",
                 p_exp > 0 and p_miss == 0 and w_miss == 0)
    run_.out.add("short", "the Python client raises or reconnects within 8 s of the cut",
                 fmt_s(py_detect, "never"), py_detect is not None and py_detect <= 8.0)
    run_.out.add("short", "… and has live data within 10 s after the path returns",
                 fmt_s(rel(py_live, t_back), "never"), py_live is not None and py_live - t_back <= 10.0)
    run_.out.add("short", "watch leaves 'live' (stale mark or reconnecting) within 8 s of the cut",
                 fmt_s(rel(w_down, t1), "never"), w_down is not None and w_down - t1 <= 8.0)
    run_.out.add("short", "… and shows live data within 10 s after the path returns",
                 fmt_s(rel(w_live, t_back), "never"), w_live is not None and w_live - t_back <= 10.0)
    run_.out.add("short", f"the cut-off viewer leaves and its timer stops while the path is cut ({cut:.0f} s)",
                 f"left {fmt_s(rel(left, t1), 'never')}, stopped {fmt_s(rel(stopped, t1), 'never')}",
                 left is not None and stopped is not None and max(left, stopped) - t1 <= cut - 1.0)
    run_.out.add("short", "no session listed twice", f"{twice} times ({twice_s:.1f} s)", twice == 0)
    run_.out.add("short", "no gap, no duplicate in seq order (watch, Python)",
                 f"watch {sw.summary()}; Python {sp.summary()}", sw.gaps + sw.dups + sp.gaps + sp.dups == 0)


SCENARIO_FUNCS = {"healthy": scenario_healthy, "blackhole": scenario_blackhole, "ghost": scenario_ghost,
                  "oneshots": scenario_oneshots, "flood": scenario_flood, "bigtimers": scenario_bigtimers,
                  "cuts": scenario_cuts, "short": scenario_short}


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------


def git_commit(path: Path = REPO_ROOT) -> str:
    try:
        return subprocess.run(["git", "-C", str(path), "log", "-1", "--format=%h"], capture_output=True, text=True,
                              timeout=5).stdout.strip() or "?"
    except OSError:
        return "?"


def table(out: Outcome) -> str:
    rows = [("scenario", "Must reach", "measured", "today (issue)", "")]
    for c in out.checks:
        rows.append((c.scenario, c.what, c.figure, c.today, "PASS" if c.ok else ("FAIL" if c.ok is False else "—")))
    return "\n".join(f"  {r[4]:4}  {r[0]:9}  {r[1]}\n{'':17}{r[2]}" + (f"\n{'':17}(issue: {r[3]})" if r[3] else "")
                     for r in rows[1:])


def markdown(out: Outcome, meta: dict[str, str]) -> str:
    lines = [f"#### `make wan-trials` ({meta['date']}, {meta['build']}, tools at {meta['commit']})", "",
             f"{meta['machine']}; {meta['link']}. Command: `{meta['command']}`.", "",
             "| scenario | Must reach | measured | issue 27 (before) | |", "|---|---|---|---|---|"]
    for c in out.checks:
        cell = lambda x: x.replace("|", "\\|")   # noqa: E731
        lines.append(f"| {c.scenario} | {cell(c.what)} | {cell(c.figure)} | {cell(c.today)} | "
                     f"{'PASS' if c.ok else ('FAIL' if c.ok is False else '—')} |")
    lines += ["", f"Verdict: {meta['verdict']}"]
    return "\n".join(lines)


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--server", default=str(REPO_ROOT / ".build" / "release" / "outatime-server"))
    p.add_argument("--cli", default=str(REPO_ROOT / ".build" / "release" / "outatime"), help="the terminal client")
    p.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"comma-separated: {', '.join(SCENARIOS)}")
    p.add_argument("--quick", action="store_true", help="shorter cuts and fewer trials (about 6 minutes)")
    p.add_argument("--plain", action="store_true", help="plain TCP instead of TLS")
    p.add_argument("--watch-json", action="store_true", help="read watch through --json even when it has --jsonl")
    p.add_argument("--server-arg", action="append", default=[], help="an extra server flag (repeatable)")
    p.add_argument("--blackhole-s", type=float, default=20.0)
    p.add_argument("--after-s", type=float, default=40.0, help="how long to watch after a cut ends")
    p.add_argument("--ghost-s", type=float, default=45.0, help="the ghost scenario's long blackhole")
    p.add_argument("--ghost-short-s", type=float, default=10.0, help="… and its short one")
    p.add_argument("--oneshots", type=int, default=100)
    p.add_argument("--oneshot-timeout", type=float, default=4.0, help="the one-shots' --timeout")
    p.add_argument("--rate", default="1mbit", help="the bandwidth cap (tc tbf rate) of flood and bigtimers")
    p.add_argument("--flood-rate", type=float, default=250.0)
    p.add_argument("--flood-size", type=int, default=2048)
    p.add_argument("--flood-s", type=float, default=60.0)
    p.add_argument("--big-timers", type=int, default=6000)
    p.add_argument("--big-s", type=float, default=60.0)
    p.add_argument("--cuts", type=int, default=20, help="cuts of each kind")
    p.add_argument("--cut-settle-s", type=float, default=15.0, help="after a cut, wait (at most) for data again")
    p.add_argument("--cut-gap-s", type=float, default=2.0)
    p.add_argument("--healthy-s", type=float, default=60.0)
    p.add_argument("--short-healthy-s", type=float, default=15.0, help="short: the healthy phase")
    p.add_argument("--short-cut-s", type=float, default=15.0, help="short: the blackhole")
    p.add_argument("--short-after-s", type=float, default=12.0, help="short: after the blackhole")
    p.add_argument("--latency-n", type=int, default=20, help="one-shots timed on the healthy link")
    p.add_argument("--budget-s", type=float, default=2400.0, help="no scenario starts after this")
    p.add_argument("--baseline", help="JSON figures of an earlier run (--json) to compare the healthy link with")
    p.add_argument("--json", help="write the figures here")
    p.add_argument("--markdown", help="write the markdown block here")
    p.add_argument("--dir", help="keep the database, logs and certificates here")
    p.add_argument("--seed", type=int, default=None)
    a = p.parse_args(argv)
    if a.quick:
        defaults = {"blackhole_s": 20.0, "after_s": 38.0, "ghost_s": 38.0, "oneshots": 30, "flood_s": 30.0,
                    "big_timers": 6000, "big_s": 40.0, "cuts": 4, "healthy_s": 30.0, "latency_n": 10, "budget_s": 900.0}
        for k, v in defaults.items():
            if getattr(a, k) == p.get_default(k):
                setattr(a, k, v)
    chosen = [s for s in a.scenarios.split(",") if s]
    bad = [s for s in chosen if s not in SCENARIOS + EXTRA_SCENARIOS]
    if bad:
        p.error(f"--scenarios: unknown {', '.join(bad)}; known: {', '.join(SCENARIOS)}")
    a.chosen = chosen
    for tool, flag in ((a.server, "--server"), (a.cli, "--cli")):
        if not os.access(tool, os.X_OK):
            p.error(f"{flag} {tool}: not an executable (build it: swift build -c release)")
    if not 1 <= a.oneshots <= 1000 or not 0 <= a.cuts <= 100:
        p.error("--oneshots 1..1000, --cuts 0..100")
    return a


def main() -> int:
    if len(sys.argv) >= 2 and sys.argv[1] == "_bridge":
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        return bridge_main(sys.argv[2], sys.argv[3])
    if len(sys.argv) >= 2 and sys.argv[1] == "_agent":
        return agent_main(sys.argv[2:])
    a = parse_args(sys.argv[1:])
    ok, why = Rig.available()
    if not ok:
        print(f"wan_trials: cannot build the rig: {why}", file=sys.stderr)
        return 2
    stale = Rig.remove_stale()
    if stale:
        log(f"removed namespaces left by an earlier run: {', '.join(stale)}")
    run_ = Run(a)
    run_.baseline = json.loads(Path(a.baseline).read_text()) if a.baseline else None

    def on_term(*_: Any) -> None:
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)
    code = 1
    try:
        run_.start()
        for name in a.chosen:
            if run_.budget_left() < 60:
                log(f"budget of {a.budget_s:.0f} s spent: {name} skipped")
                run_.out.add(name, "skipped", "time budget spent", None)
                continue
            log(f"== {name}")
            t = time.monotonic()
            try:
                SCENARIO_FUNCS[name](run_)
            except RuntimeError as exc:
                run_.out.add(name, "ran", f"error: {exc}", False)
            finally:
                run_.rig.heal()
            log(f"== {name}: {time.monotonic() - t:.0f} s")
        ran = [c for c in run_.out.checks if c.ok is not None]
        failed = [c for c in ran if not c.ok]
        verdict = (f"PASS: {len(ran)} checks" if ran and not failed
                   else f"FAIL: {len(failed)} of {len(ran)} checks" if ran else "nothing decided")
        code = 0 if ran and not failed else 1
        meta = {"date": time.strftime("%Y-%m-%d"), "commit": git_commit(),
                "build": f"server {os.path.relpath(a.server, REPO_ROOT) if a.server.startswith(str(REPO_ROOT)) else a.server}",
                "machine": f"{os.cpu_count()} cores, shared (timings noisy)",
                "link": ("TLS" if not a.plain else "plain TCP") + ", namespaces + user-space bridge, tbf "
                        f"{a.rate} for flood/bigtimers",
                "command": "python3 tools/wan_trials.py " + " ".join(sys.argv[1:]), "verdict": verdict}
        print("\nfigures against issue 27's Must reach:\n")
        print(table(run_.out))
        md = markdown(run_.out, meta)
        print("\nmarkdown for docs/BENCHMARKS.md:\n")
        print(md)
        if a.markdown:
            Path(a.markdown).write_text(md + "\n")
        if a.json:
            Path(a.json).write_text(json.dumps(run_.out.figures, indent=1, default=str) + "\n")
        print(f"\n{verdict}  ({time.monotonic() - run_.started:.0f} s)")
    except KeyboardInterrupt:
        log("interrupted")
        code = 1
    except RuntimeError as exc:
        log(f"wan_trials: {exc}")
        code = 2
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)   # a second Ctrl-C must not stop the clean-up
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        run_.stop_all()
    return code


if __name__ == "__main__":
    sys.exit(main())
