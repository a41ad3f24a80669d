#!/usr/bin/env python3
"""Cluster failover trials (issue 25, "Must reach"): three nats-servers (one
JetStream cluster, R3), three OutaTime nodes and haproxy on this machine
(tools/cluster_local.py's `Cluster`), then:

a. SIGKILL trials (--trials, 20): durable load on one channel per trial
   (`timers/...` `add`, each command tagged), from one writer connected
   directly to each node plus one through haproxy, every writer subscribed,
   and one pure subscriber per node. The channel's owner is found (below),
   SIGKILLed, and *takeover* is the time from the kill to the first
   acknowledged command sent after it through a surviving node. The killed
   node is restarted, then every acknowledged (seq, tag) must be in
   `history` (else *lost*), each subscriber must have seen strictly
   increasing, gap-free seqs (else *duplicates*, *reorders*, *gaps*), and
   the same event at the same seq as `history` and every other subscriber
   (else *forks*; a seq acknowledged to two commands is a fork too).
b. freeze: SIGSTOP the owner 5 s, SIGCONT; the same checks, the frozen
   node's replies after SIGCONT (refused with a code, or acknowledged, i.e.
   forwarded), and, when the event messages say which node wrote them
   (their `OT-Writer` header), no message from the frozen node among the
   other nodes' writes after takeover.
c. link cut: node n3 runs in a network namespace (`ip netns`), joined to
   the host by two veth pairs, one to the nats-servers and one for clients
   and haproxy; the NATS pair is set down for --cut-s seconds. n3 must
   answer commands with a coded error within a few seconds, and no seq may
   be acknowledged twice. Without netns (not root, no iproute2) this part
   is skipped, saying so.
d. host loss (--host-loss-trials, 3): SIGKILL the owner and, at the same
   moment, the nats-server leading the JetStream stream of the channel
   (from the nats-servers' monitoring endpoint /jsz?streams=true);
   takeover as in (a), 4-9 s expected (a Raft election timeout).

Finding a channel's owner, in this order (the first that answers wins):
1. `stats` on every live node, its `cluster` object: `owned_channels` (a
   list of channel names), `owned_slots` (a list of slot numbers), or
   `owners` (the slot table: a list of 256 node names or null);
2. the `OT_OWNERS` key-value bucket in JetStream, key `s%03d` of the
   channel's slot (`{"node": ..., "epoch": ...}`), read directly from NATS;
3. none of these: the node that acknowledged the last command (on a
   server without slot ownership every node serves every channel, so
   there is no owner; the figures are then marked "guessed" and the
   verdict is INCONCLUSIVE, not PASS).
The slot of a channel is computed as the server does (SlotMap.swift:
FNV-1a 64 over the name, xor-folded to 8 bits), its stream as
ChannelAddress.swift does (FNV-1a 32 mod the 3 partitions).

Prints one line per trial, a summary table, and a markdown block for
docs/CLUSTER.md (also written to --markdown). Exits 0 when every check
passed with a known owner, 1 when a check failed or the owner was never
known, 2 for bad usage. Every wait has a deadline, and --budget-s (570)
bounds the whole run: trials that would start after it are skipped.

    python3 tools/cluster_trials.py --server .build/release/outatime-server
    make cluster-trials [CLUSTER_TRIALS_ARGS='--trials 5']

Python 3 standard library plus the project's client (clients/python).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "clients" / "python"))
sys.path.insert(0, str(REPO_ROOT / "tools"))

from cluster_local import Cluster, Node, nats_version, wait_port  # noqa: E402
from outatime import Client, ConnectionClosed, OutaTimeError, OutaTimeTimeout  # noqa: E402

CLIENT_TIMEOUT = 8.0     # each request's reply
PARTITIONS = 3           # ClusterSettings.partitions
SLOTS = 256              # SlotMap.count


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


# --------------------------------------------------------------------------
# Where a channel lives (the server's own functions, in Python)
# --------------------------------------------------------------------------


def fnv1a64(data: bytes, seed: int = 0xCBF29CE484222325) -> int:
    h = seed
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def slot_of(channel: str) -> int:
    """SlotMap.slot(of:): FNV-1a 64, xor-folded to 8 bits."""
    h = fnv1a64(channel.encode())
    h ^= h >> 32
    h ^= h >> 16
    h ^= h >> 8
    return h & 0xFF


def partition_of(channel: str, partitions: int = PARTITIONS) -> int:
    """ChannelAddress.partition: FNV-1a 32 of the name mod the partitions."""
    h = 0x811C9DC5
    for b in channel.encode():
        h ^= b
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h % max(partitions, 1)


def subject_of(channel: str) -> str:
    kind, name = channel.split("/", 1)
    return f"ot.ev.{partition_of(channel)}.{kind}.{name.replace('.', '=')}"


# --------------------------------------------------------------------------
# A few NATS requests without a NATS library (the text protocol)
# --------------------------------------------------------------------------


class NatsLite:
    """Just enough of the NATS client protocol for JetStream API requests:
    CONNECT, SUB on an inbox, PUB with a reply subject, MSG/HMSG back."""

    def __init__(self, host: str, port: int, timeout: float = 3.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        # Small writes one after the other: without this, Nagle and delayed
        # ACKs cost 40 ms per request.
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.timeout = timeout
        self.sid = 0
        line = self._line(time.monotonic() + timeout)
        if not line.startswith(b"INFO"):
            raise OSError(f"not a NATS server: {line[:80]!r}")
        self.sock.sendall(b'CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true,'
                          b'"protocol":1,"name":"cluster-trials"}\r\nPING\r\n')
        deadline = time.monotonic() + timeout
        while True:
            line = self._line(deadline)
            if line == b"PONG":
                return
            if line.startswith(b"-ERR"):
                raise OSError(line.decode(errors="replace"))

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def _fill(self, deadline: float) -> None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("NATS: no answer in time")
        self.sock.settimeout(left)
        chunk = self.sock.recv(65536)
        if not chunk:
            raise OSError("NATS: connection closed")
        self.buf += chunk

    def _line(self, deadline: float) -> bytes:
        while b"\r\n" not in self.buf:
            self._fill(deadline)
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _bytes(self, n: int, deadline: float) -> bytes:
        while len(self.buf) < n + 2:
            self._fill(deadline)
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def request(self, subject: str, payload: bytes, timeout: Optional[float] = None) -> tuple[dict[str, str], bytes]:
        """One request; returns (headers, payload) of the reply."""
        # One wildcard subscription for every reply; each request's reply
        # subject ends with its number, and anything else is skipped.
        prefix = f"_INBOX.trials.{os.getpid()}.{id(self)}"
        head = b""
        if self.sid == 0:
            head = f"SUB {prefix}.* 1\r\n".encode()
        self.sid += 1
        inbox = f"{prefix}.{self.sid}"
        self.sock.sendall(head + f"PUB {subject} {inbox} {len(payload)}\r\n".encode() + payload + b"\r\n")
        deadline = time.monotonic() + (timeout or self.timeout)
        if True:
            while True:
                line = self._line(deadline)
                if line == b"PING":
                    self.sock.sendall(b"PONG\r\n")
                    continue
                if line.startswith(b"-ERR"):
                    raise OSError(line.decode(errors="replace"))
                parts = line.split()
                if not parts or parts[0] not in (b"MSG", b"HMSG"):
                    continue
                if parts[0] == b"MSG":
                    body = self._bytes(int(parts[-1]), deadline)
                    hdr = b""
                else:
                    hlen, total = int(parts[-2]), int(parts[-1])
                    raw = self._bytes(total, deadline)
                    hdr, body = raw[:hlen], raw[hlen:]
                if parts[1] != inbox.encode():
                    continue
                return self._headers(hdr), body

    @staticmethod
    def _headers(raw: bytes) -> dict[str, str]:
        out: dict[str, str] = {}
        lines = raw.decode(errors="replace").split("\r\n")
        if lines and lines[0].startswith("NATS/1.0"):
            status = lines[0][len("NATS/1.0"):].strip()
            if status:
                out["Status"] = status
        for ln in lines[1:]:
            if ":" in ln:
                k, v = ln.split(":", 1)
                out[k.strip()] = v.strip()
        return out

    def msg_get(self, stream: str, query: dict[str, Any]) -> Optional[dict[str, Any]]:
        """$JS.API.STREAM.MSG.GET: the stored message (subject, seq, headers,
        data as bytes), or None when there is none."""
        _, body = self.request(f"$JS.API.STREAM.MSG.GET.{stream}", json.dumps(query).encode())
        if not body:
            return None
        reply = json.loads(body)
        if "error" in reply:
            return None
        msg = reply.get("message") or {}
        hdrs = base64.b64decode(msg["hdrs"]) if msg.get("hdrs") else b""
        return {"subject": msg.get("subject"), "seq": msg.get("seq"), "time": msg.get("time"),
                "headers": self._headers(hdrs), "data": base64.b64decode(msg.get("data") or "")}


def http_json(url: str, timeout: float = 2.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return json.loads(resp.read())


# --------------------------------------------------------------------------
# The network namespace for the link cut
# --------------------------------------------------------------------------


class Netns:
    """A network namespace for one node, joined to the host by two veth
    pairs: `nats` (the node's only way to the nats-servers) and `client`
    (clients and haproxy). Cutting sets the host end of `nats` down."""

    def __init__(self) -> None:
        tag = f"{os.getpid() % 10000}"
        self.name = f"ot-trials-{tag}"
        self.third = random.randrange(10, 250)
        self.nats_host, self.nats_peer = f"10.214.{self.third}.1", f"10.214.{self.third}.2"
        self.client_host, self.client_peer = f"10.215.{self.third}.1", f"10.215.{self.third}.2"
        self.proxy_source = f"10.215.{self.third}.3"
        self.nats_if, self.client_if = f"otn{tag}h", f"otc{tag}h"
        self.up = False

    @staticmethod
    def _ip(*args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=10)

    def setup(self) -> None:
        ns = self.name
        self._ip("netns", "add", ns)
        self.up = True
        self._ip("netns", "exec", ns, "ip", "link", "set", "lo", "up")
        for host_if, host_addr, peer_addr in ((self.nats_if, self.nats_host, self.nats_peer),
                                              (self.client_if, self.client_host, self.client_peer)):
            peer_if = host_if[:-1] + "n"
            self._ip("link", "add", host_if, "type", "veth", "peer", "name", peer_if)
            self._ip("link", "set", peer_if, "netns", ns)
            self._ip("addr", "add", f"{host_addr}/24", "dev", host_if)
            self._ip("link", "set", host_if, "up")
            self._ip("netns", "exec", ns, "ip", "addr", "add", f"{peer_addr}/24", "dev", peer_if)
            self._ip("netns", "exec", ns, "ip", "link", "set", peer_if, "up")
        self._ip("addr", "add", f"{self.proxy_source}/24", "dev", self.client_if)

    def cut(self) -> None:
        self._ip("link", "set", self.nats_if, "down")

    def restore(self) -> None:
        self._ip("link", "set", self.nats_if, "up")

    def teardown(self) -> None:
        if not self.up:
            return
        for host_if in (self.nats_if, self.client_if):
            subprocess.run(["ip", "link", "del", host_if], capture_output=True, timeout=10)
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True, timeout=10)
        self.up = False

    @staticmethod
    def available() -> tuple[bool, str]:
        if os.geteuid() != 0:
            return False, "not root"
        if not shutil.which("ip"):
            return False, "no `ip` (iproute2)"
        probe = f"ot-probe-{os.getpid()}"
        r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True, timeout=10)
        if r.returncode != 0:
            return False, f"`ip netns add` failed: {r.stderr.strip()}"
        subprocess.run(["ip", "netns", "del", probe], capture_output=True, timeout=10)
        return True, ""


# --------------------------------------------------------------------------
# Load: writers and subscribers
# --------------------------------------------------------------------------


@dataclass
class Ack:
    seq: int
    tag: str
    sent: float       # monotonic, when the command was sent
    acked: float      # when its reply came
    via: str          # the endpoint's label (n1, n2, n3, haproxy)
    probe: bool = False  # a Prober's: seq unknown (-1), found in history by its tag


@dataclass
class Refusal:
    sent: float
    at: float
    code: str
    message: str
    via: str


class SeqWatch:
    """What one subscription saw: every event, and whether its seqs rose by
    exactly one each time."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.last: Optional[int] = None
        self.floor = 0                     # the last snapshot's seq
        self.seen: dict[int, str] = {}     # seq -> tag
        self.duplicates = 0
        self.reorders = 0
        self.gaps = 0
        self.notes: list[str] = []

    def start(self, seq: int) -> None:
        """A subscribe's snapshot at `seq`: every later event must be seq + 1, + 2, ..."""
        self.last = seq
        self.floor = seq

    def event(self, push: dict[str, Any]) -> None:
        seq = push.get("seq")
        if not isinstance(seq, int):
            return
        tag = tag_of(push) or f"<{push.get('event')}>"
        if seq in self.seen:
            self.duplicates += 1
            if len(self.notes) < 5:
                self.notes.append(f"{self.label}: seq {seq} again")
        elif self.last is not None and seq <= self.last and seq <= self.floor:
            # At or below the seq of the snapshot it subscribed with: a repeat.
            self.duplicates += 1
            if len(self.notes) < 5:
                self.notes.append(f"{self.label}: seq {seq} after a snapshot at seq {self.floor}")
        elif self.last is not None and seq <= self.last:
            self.reorders += 1
            if len(self.notes) < 5:
                self.notes.append(f"{self.label}: seq {seq} after {self.last}")
        elif self.last is not None and seq > self.last + 1:
            self.gaps += 1
            if len(self.notes) < 5:
                self.notes.append(f"{self.label}: seq {seq} after {self.last} (gap)")
        self.seen.setdefault(seq, tag)
        if self.last is None or seq > self.last:
            self.last = seq


def tag_of(event: dict[str, Any]) -> Optional[str]:
    data = event.get("data")
    timer = data.get("timer") if isinstance(data, dict) else None
    tag = timer.get("event") if isinstance(timer, dict) else None
    return tag if isinstance(tag, str) else None


@dataclass
class Endpoint:
    label: str        # n1, n2, n3 or haproxy
    host: str
    port: int
    node: Optional[str]  # the node behind it; None for haproxy


def setup(client: Client, channel: str, timeout: float = 6.0) -> dict[str, Any]:
    """Connect and subscribe, again after a refusal until `timeout` (a
    fresh channel created on two nodes at once: one of them is refused)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if not client.connected:
                client.connect()
            return client.subscribe(channel)
        except ConnectionClosed:
            raise
        except OutaTimeError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


class Subscriber(threading.Thread):
    """A subscription that only watches."""

    def __init__(self, ep: Endpoint, channel: str, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.ep, self.channel, self.stop_event = ep, channel, stop
        self.watch = SeqWatch(f"subscriber@{ep.label}")
        self.ready = threading.Event()
        self.error: Optional[str] = None
        self.closed_at: Optional[float] = None

    def run(self) -> None:
        client = Client(self.ep.host, self.ep.port, name=f"trials-sub-{self.ep.label}", timeout=CLIENT_TIMEOUT)
        try:
            self.watch.start(int(setup(client, self.channel)["seq"]))
        except (OutaTimeError, OSError) as exc:
            self.error = f"subscribe at {self.ep.label}: {exc}"
            self.ready.set()
            return
        self.ready.set()
        try:
            while not self.stop_event.is_set():
                try:
                    push = client.next_push(0.2)
                except OutaTimeTimeout:
                    continue
                if push.get("type") == "event" and push.get("channel") == self.channel:
                    self.watch.event(push)
        except (ConnectionClosed, OSError):
            self.closed_at = time.monotonic()
        except OutaTimeError as exc:
            self.error = f"subscriber at {self.ep.label}: {exc}"
        finally:
            client.close()


class Writer(threading.Thread):
    """A subscribed client sending `add` commands one after the other, each
    with a unique tag; an `ok` reply is an acknowledgement, its seq taken
    from its own event push (which comes before the reply, PROTOCOL 6.9)."""

    def __init__(self, ep: Endpoint, channel: str, prefix: str, stop: threading.Event, pace: float) -> None:
        super().__init__(daemon=True)
        self.ep, self.channel, self.prefix, self.stop_event, self.pace = ep, channel, prefix, stop, pace
        self.watch = SeqWatch(f"writer@{ep.label}")
        self.acks: list[Ack] = []
        self.refusals: list[Refusal] = []
        self.ready = threading.Event()
        self.error: Optional[str] = None
        self.closed_at: Optional[float] = None
        self.hello_node: Optional[str] = None
        self.reconnects = 0
        self.lock = threading.Lock()

    def run(self) -> None:
        client = Client(self.ep.host, self.ep.port, name=f"trials-{self.ep.label}", timeout=CLIENT_TIMEOUT)
        try:
            hello = client.connect()
            self.hello_node = hello.get("node") if isinstance(hello.get("node"), str) else None
            self.watch.start(int(setup(client, self.channel)["seq"]))
        except (OutaTimeError, OSError) as exc:
            self.error = f"writer at {self.ep.label}: {exc}"
            self.ready.set()
            return
        self.ready.set()
        n = 0
        try:
            while not self.stop_event.is_set():
                n += 1
                tag = f"{self.prefix}-{self.ep.label}-{n}"
                sent = time.monotonic()
                try:
                    client.command(self.channel, "add", event=tag, location=self.ep.label, remaining_s=3600)
                except OutaTimeTimeout as exc:
                    with self.lock:
                        self.refusals.append(Refusal(sent, time.monotonic(), "timeout", str(exc), self.ep.label))
                    continue
                except ConnectionClosed:
                    raise
                except OutaTimeError as exc:
                    with self.lock:
                        self.refusals.append(Refusal(sent, time.monotonic(), exc.code, str(exc), self.ep.label))
                    self._drain(client, None)
                    self.stop_event.wait(self.pace)
                    continue
                acked = time.monotonic()
                seq = self._drain(client, tag)
                with self.lock:
                    if seq is None:
                        # PROTOCOL 6.9: a subscribed issuer gets its event before the reply.
                        self.refusals.append(Refusal(sent, acked, "no_event",
                                                     f"'{tag}' acknowledged without its event before the reply",
                                                     self.ep.label))
                        self.acks.append(Ack(-1, tag, sent, acked, self.ep.label, probe=True))
                    else:
                        self.acks.append(Ack(seq, tag, sent, acked, self.ep.label))
                self.stop_event.wait(self.pace)
        except (ConnectionClosed, OSError):
            self.closed_at = time.monotonic()
            if self.ep.node is None and not self.stop_event.is_set() and self._reconnect(client):
                self.run_more(client, n)
        except OutaTimeError as exc:
            self.error = f"writer at {self.ep.label}: {exc}"
        finally:
            client.close()

    def _reconnect(self, client: Client) -> bool:
        """Through haproxy only: connect again (to another node) and recover
        the channel with `since` = the last seq seen; the recovered events go
        through the same seq checks. Bounded: 40 tries, 0.25 s apart."""
        for _ in range(40):
            if self.stop_event.wait(0.25):
                return False
            try:
                client.close()
                client.connect()
                result = client.subscribe(self.channel, since=self.watch.last)
            except (OutaTimeError, OSError):
                continue
            if result.get("recovered") is True:
                for ev in result.get("events") or []:
                    self.watch.event(ev)
            else:
                self.watch.notes.append(f"{self.watch.label}: reconnected without recovery (since "
                                        f"{self.watch.last}, seq {result.get('seq')})")
                self.watch.gaps += 1
            self.watch.start(int(result.get("seq", self.watch.last or 0)))
            self.reconnects += 1
            return True
        return False

    def run_more(self, client: Client, n: int) -> None:
        """The command loop again after a reconnection (at most 3 times)."""
        if self.reconnects > 3:
            return
        try:
            while not self.stop_event.is_set():
                n += 1
                tag = f"{self.prefix}-{self.ep.label}-r{self.reconnects}-{n}"
                sent = time.monotonic()
                try:
                    client.command(self.channel, "add", event=tag, location=self.ep.label, remaining_s=3600)
                except OutaTimeTimeout as exc:
                    with self.lock:
                        self.refusals.append(Refusal(sent, time.monotonic(), "timeout", str(exc), self.ep.label))
                    continue
                except ConnectionClosed:
                    raise
                except OutaTimeError as exc:
                    with self.lock:
                        self.refusals.append(Refusal(sent, time.monotonic(), exc.code, str(exc), self.ep.label))
                    self._drain(client, None)
                    self.stop_event.wait(self.pace)
                    continue
                acked = time.monotonic()
                seq = self._drain(client, tag)
                with self.lock:
                    if seq is not None:
                        self.acks.append(Ack(seq, tag, sent, acked, self.ep.label))
                self.stop_event.wait(self.pace)
        except (ConnectionClosed, OSError):
            if not self.stop_event.is_set() and self._reconnect(client):
                self.run_more(client, n)
        except OutaTimeError as exc:
            self.error = f"writer at {self.ep.label} after reconnecting: {exc}"

    def _drain(self, client: Client, tag: Optional[str]) -> Optional[int]:
        seq = None
        while client.pending_pushes():
            push = client.next_push(0)
            if push.get("type") == "event" and push.get("channel") == self.channel:
                self.watch.event(push)
                if tag is not None and tag_of(push) == tag:
                    seq = push.get("seq")
        return seq if isinstance(seq, int) else None

    def snapshot(self) -> tuple[list[Ack], list[Refusal]]:
        with self.lock:
            return list(self.acks), list(self.refusals)


class Prober(threading.Thread):
    """One `add` at a time with a short timeout on a fresh connection, a new
    connection after each timeout: a writer's command forwarded to a dead or
    frozen owner waits for the forward's timeout (5 s), which would hide
    when another node took the channel over. Its acknowledgements have no
    seq (it does not subscribe): their tags are looked up in history."""

    def __init__(self, ep: Endpoint, channel: str, prefix: str, stop: threading.Event,
                 pace: float = 0.05, timeout: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.ep, self.channel, self.prefix, self.stop_event = ep, channel, prefix, stop
        self.pace, self.timeout = pace, timeout
        self.acks: list[Ack] = []
        self.refusals: list[Refusal] = []
        self.lock = threading.Lock()

    def run(self) -> None:
        client: Optional[Client] = None
        n = 0
        while not self.stop_event.is_set():
            if client is None:
                client = Client(self.ep.host, self.ep.port, name=f"trials-probe-{self.ep.label}", timeout=self.timeout)
                try:
                    client.connect()
                except (OutaTimeError, OSError):
                    client.close()
                    client = None
                    self.stop_event.wait(self.pace)
                    continue
            n += 1
            tag = f"{self.prefix}-probe-{self.ep.label}-{n}"
            sent = time.monotonic()
            try:
                client.command(self.channel, "add", event=tag, location="probe", remaining_s=3600)
                with self.lock:
                    self.acks.append(Ack(-1, tag, sent, time.monotonic(), self.ep.label, probe=True))
            except OutaTimeTimeout:
                with self.lock:
                    self.refusals.append(Refusal(sent, time.monotonic(), "probe_timeout", "", self.ep.label))
                client.close()
                client = None
            except (ConnectionClosed, OSError):
                client.close()
                client = None
            except OutaTimeError as exc:
                with self.lock:
                    self.refusals.append(Refusal(sent, time.monotonic(), exc.code, str(exc), self.ep.label))
            self.stop_event.wait(self.pace)
        if client is not None:
            client.close()

    def snapshot(self) -> tuple[list[Ack], list[Refusal]]:
        with self.lock:
            return list(self.acks), list(self.refusals)


class Load:
    """Writers and subscribers of one channel over the given endpoints."""

    def __init__(self, channel: str, endpoints: list[Endpoint], prefix: str, pace: float) -> None:
        self.channel = channel
        self.stop_event = threading.Event()
        self.writers = [Writer(ep, channel, prefix, self.stop_event, pace) for ep in endpoints]
        self.subscribers = [Subscriber(ep, channel, self.stop_event) for ep in endpoints if ep.node]
        self.probers = [Prober(ep, channel, prefix, self.stop_event) for ep in endpoints if ep.node]
        self.stop_s = 0.0

    def start(self, timeout: float = 15.0) -> list[str]:
        # The channel is created once, through the first node, before
        # anything else subscribes; then the subscribers, so that they see
        # every event the writers cause.
        first = next((w for w in self.writers if w.ep.node), None)
        if first is not None:
            first.start()
            first.ready.wait(timeout)
        for s in self.subscribers:
            s.start()
        for s in self.subscribers:
            s.ready.wait(timeout)
        for w in self.writers:
            if w is not first:
                w.start()
        for w in self.writers:
            w.ready.wait(timeout)
        for p in self.probers:
            p.start()
        return [x.error for x in self.subscribers + self.writers if x.error]

    def stop(self) -> None:
        self.stop_event.set()
        started = time.monotonic()
        for t in self.writers + self.subscribers + self.probers:
            t.join(CLIENT_TIMEOUT + 2)
        self.stop_s = round(time.monotonic() - started, 1)

    def acks(self, probes: bool = True) -> list[Ack]:
        out: list[Ack] = []
        for w in self.writers:
            out += w.snapshot()[0]
        if probes:
            for p in self.probers:
                out += p.snapshot()[0]
        return out

    def refusals(self, probes: bool = True) -> list[Refusal]:
        out: list[Refusal] = []
        for w in self.writers:
            out += w.snapshot()[1]
        if probes:
            for p in self.probers:
                out += p.snapshot()[1]
        return out

    def wait_acks(self, count: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.acks()) >= count:
                return True
            time.sleep(0.05)
        return False

    def first_ack_after(self, t0: float, via: set[str], timeout: float, probes: bool = True) -> Optional[Ack]:
        """The first acknowledgement of a command sent after `t0` through one
        of the endpoints `via`; None when none comes within `timeout`."""
        deadline = t0 + timeout
        while True:
            hits = [a for a in self.acks(probes) if a.sent > t0 and a.via in via]
            if hits:
                return min(hits, key=lambda a: a.acked)
            if time.monotonic() > deadline:
                return None
            time.sleep(0.01)


# --------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------


@dataclass
class Result:
    kind: str                      # kill, freeze, cut, host
    n: int
    channel: str
    owner: Optional[str] = None
    owner_how: str = ""
    takeover_ms: Optional[float] = None
    acked: int = 0
    lost: int = 0
    duplicates: int = 0
    reorders: int = 0
    gaps: int = 0
    forks: int = 0
    refused: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    error: Optional[str] = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def guessed(self) -> bool:
        return self.owner_how.startswith("guess")

    @property
    def failed(self) -> bool:
        return bool(self.error or self.lost or self.duplicates or self.reorders or self.gaps or self.forks
                    or (self.kind in ("kill", "freeze", "host") and self.takeover_ms is None)
                    or self.refused.get("no_event")
                    or self.extra.get("failed"))


class Trials:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.run_id = f"{int(time.time()) % 100000:05d}"
        self.netns: Optional[Netns] = None
        self.cluster: Optional[Cluster] = None
        self.results: list[Result] = []
        self.started = time.monotonic()
        self.ownership_fields_seen: set[str] = set()

    # ---- the cluster ----

    def start_cluster(self) -> None:
        a = self.args
        layout = [Node(i, "127.0.0.1", a.node_port + i, a.node_port + 100 + i) for i in range(3)]
        nats_host = "127.0.0.1"
        if not a.no_netns:
            ok, why = Netns.available()
            if ok:
                self.netns = Netns()
                self.netns.setup()
                nats_host = self.netns.nats_host
                n3 = layout[2]
                n3.host = self.netns.client_peer
                n3.netns = self.netns.name
                n3.proxy_source = self.netns.proxy_source
                n3.nats_urls = ",".join(f"nats://{self.netns.nats_host}:{a.nats_port + i}" for i in range(3))
                log(f"netns {self.netns.name}: n3 at {n3.host} (NATS via {self.netns.nats_if}, "
                    f"clients via {self.netns.client_if})")
            else:
                log(f"no network namespace ({why}): the link cut (c) is skipped")
        ns = argparse.Namespace(nodes=3, port=a.port, node_port=a.node_port, nats_port=a.nats_port,
                                server=a.server, nats_server=a.nats_server, haproxy=a.haproxy, dir=a.dir,
                                nats_host=nats_host, node_layout=layout, log_level="info")
        self.cluster = Cluster(ns)
        log(f"starting 3 nats-servers, 3 nodes and haproxy in {self.cluster.folder}")
        self.cluster.start_nats()
        self.wait_jetstream()
        self.cluster.start_nodes()
        self.cluster.start_haproxy()
        for n in self.cluster.nodes:
            log(f"  {n.name}: {n.host}:{n.port} (http {n.http_port}){' in ' + n.netns if n.netns else ''}")
        log(f"  haproxy: 127.0.0.1:{a.port}; NATS {self.cluster.nats_urls()}")

    def wait_jetstream(self, timeout: float = 20.0) -> None:
        """Until a nats-server's /jsz names a meta leader."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for i in range(3):
                try:
                    jsz = http_json(self.monitor_url(i, "/jsz"))
                    if (jsz.get("meta_cluster") or {}).get("leader"):
                        return
                except (OSError, ValueError):
                    pass
            time.sleep(0.2)
        raise RuntimeError(f"the JetStream cluster elected no meta leader within {timeout} s")

    def monitor_url(self, i: int, path: str) -> str:
        assert self.cluster
        return f"http://{self.cluster.nats_host}:{self.cluster.nats_monitor_port(i)}{path}"

    def endpoints(self, live: list[Node], haproxy: bool = True) -> list[Endpoint]:
        eps = [Endpoint(n.name, n.host, n.port, n.name) for n in live]
        if haproxy:
            eps.append(Endpoint("haproxy", "127.0.0.1", self.args.port, None))
        return eps

    def live_nodes(self) -> list[Node]:
        assert self.cluster
        return [n for n in self.cluster.nodes if n.proc is not None and n.proc.poll() is None]

    def restart(self, node: Node) -> Optional[str]:
        assert self.cluster
        try:
            self.cluster.start_node(node, timeout=30)
            return None
        except RuntimeError as exc:
            return str(exc).splitlines()[0]

    def wait_ready(self, node: Node, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://{node.host}:{node.http_port}/readyz", timeout=1) as r:
                    if r.status == 200:
                        return True
            except OSError:
                pass
            time.sleep(0.2)
        return False

    def budget_left(self) -> float:
        return self.args.budget_s - (time.monotonic() - self.started)

    # ---- ownership ----

    def stats_cluster(self, node: Node) -> Optional[dict[str, Any]]:
        try:
            with Client(node.host, node.port, name="trials-stats", timeout=3) as c:
                cl = c.stats().get("cluster")
                return cl if isinstance(cl, dict) else None
        except (OutaTimeError, OSError):
            return None

    def kv_owner(self, slot: int) -> Optional[str]:
        assert self.cluster
        for i in range(3):
            try:
                nats = NatsLite(self.cluster.nats_host, self.cluster.nats_port(i), timeout=2)
            except OSError:
                continue
            try:
                msg = nats.msg_get("KV_OT_OWNERS", {"last_by_subj": f"$KV.OT_OWNERS.s{slot:03d}"})
                if msg is None or msg["headers"].get("KV-Operation") in ("DEL", "PURGE"):
                    return None
                record = json.loads(msg["data"] or b"null")
                return record.get("node") if isinstance(record, dict) else None
            except (OSError, TimeoutError, ValueError):
                continue
            finally:
                nats.close()
        return None

    def find_owner(self, channel: str, live: list[Node], load: Optional[Load]) -> tuple[Optional[str], str]:
        slot = slot_of(channel)
        infos = {n.name: self.stats_cluster(n) for n in live}
        for name, cl in infos.items():
            if not cl:
                continue
            self.ownership_fields_seen |= set(cl) & {"owned_channels", "owned_slots", "owners", "fenced", "ready"}
            if cl.get("fenced") is True:
                continue
            if isinstance(cl.get("owned_channels"), list) and channel in cl["owned_channels"]:
                return name, "stats.cluster.owned_channels"
            if isinstance(cl.get("owned_slots"), list) and slot in cl["owned_slots"]:
                return name, f"stats.cluster.owned_slots (slot {slot})"
        for name, cl in infos.items():
            owners = (cl or {}).get("owners")
            if isinstance(owners, list) and len(owners) == SLOTS and isinstance(owners[slot], str):
                return owners[slot], f"stats.cluster.owners (slot {slot}, seen by {name})"
        kv = self.kv_owner(slot)
        if kv:
            return kv, f"KV OT_OWNERS s{slot:03d}"
        if load is not None:
            acks = [a for a in load.acks() if a.via != "haproxy"]
            if acks:
                return max(acks, key=lambda a: a.acked).via, "guess: the last node to acknowledge (no ownership info)"
        return (live[0].name if live else None), "guess: the first node (no ownership info)"

    def channel_owned_by(self, want: str, prefix: str, live: list[Node]) -> tuple[str, bool]:
        """A fresh channel name whose slot `want` owns, when ownership is
        known (bounded search); else the first candidate."""
        first = f"timers/{prefix}-{self.run_id}-0"
        for k in range(64):
            channel = f"timers/{prefix}-{self.run_id}-{k}"
            owner, how = self.find_owner(channel, live, None)
            if how.startswith("guess"):
                return first, False
            if owner == want:
                return channel, True
        return first, False

    def stream_leader(self, channel: str) -> Optional[int]:
        """The index of the nats-server leading the channel's stream."""
        assert self.cluster
        stream = f"OT_EV_{partition_of(channel)}"
        for i in range(3):
            try:
                jsz = http_json(self.monitor_url(i, "/jsz?streams=true&accounts=true"))
            except (OSError, ValueError):
                continue
            for acc in jsz.get("account_details") or []:
                for st in acc.get("stream_detail") or []:
                    if st.get("name") == stream:
                        leader = (st.get("cluster") or {}).get("leader")
                        for j in range(3):
                            if leader == self.cluster.nats_name(j):
                                return j
        return None

    def ownership_exposed(self) -> bool:
        """Whether the server says who owns what: ownership fields in a
        node's `stats` cluster object, or the OT_OWNERS bucket in JetStream."""
        assert self.cluster
        for n in self.live_nodes():
            cl = self.stats_cluster(n) or {}
            if set(cl) & {"owned_channels", "owned_slots", "owners"}:
                return True
        try:
            nats = NatsLite(self.cluster.nats_host, self.cluster.nats_port(0), timeout=3)
            try:
                _, body = nats.request("$JS.API.STREAM.INFO.KV_OT_OWNERS", b"")
                return bool(body) and "error" not in json.loads(body)
            finally:
                nats.close()
        except (OSError, TimeoutError, ValueError):
            return False

    def prime(self, channels: list[str]) -> None:
        """On a server without slot ownership a node knows only the channels
        that existed when it started, and refuses to create one another node
        created since ("already exists"). So that the plumbing can still be
        exercised there, every trial's channel is created through n1 first
        and n2 and n3 are restarted to load them. Not done when the server
        exposes ownership."""
        assert self.cluster
        if self.ownership_exposed():
            log("the server exposes slot ownership: no priming")
            return
        log(f"the server exposes no slot ownership: creating the {len(channels)} trial channels through n1 and "
            "restarting n2 and n3 so that they load them (figures will be marked 'guess')")
        n1 = self.cluster.node("n1")
        with Client(n1.host, n1.port, name="trials-prime", timeout=CLIENT_TIMEOUT) as c:
            for ch in channels:
                c.subscribe(ch)
        for name in ("n2", "n3"):
            node = self.cluster.node(name)
            if node.proc is not None and node.proc.poll() is None:
                node.proc.terminate()
                try:
                    node.proc.wait(15)
                except subprocess.TimeoutExpired:
                    self.cluster.kill_node(node)
            why = self.restart(node)
            if why:
                raise RuntimeError(f"{name} did not restart after priming: {why}")

    # ---- checks ----

    def read_history(self, channel: str, live: list[Node], timeout: float = 20.0) -> tuple[Optional[dict[int, str]], str]:
        """seq -> tag of the whole history, through any live node."""
        deadline = time.monotonic() + timeout
        last_error = ""
        while time.monotonic() < deadline:
            for n in live:
                try:
                    with Client(n.host, n.port, name="trials-history", timeout=5) as c:
                        out: dict[int, str] = {}
                        after = 0
                        for _ in range(1000):
                            page = c.history(channel, after=after, limit=1000)
                            events = page.get("events") or []
                            for ev in events:
                                out[int(ev["seq"])] = tag_of(ev) or f"<{ev.get('event')}>"
                            if not events or after >= int(page["seq"]):
                                break
                            after = int(events[-1]["seq"])
                            if after >= int(page["seq"]):
                                break
                        return out, n.name
                except (OutaTimeError, OSError) as exc:
                    last_error = f"{n.name}: {exc}"
            time.sleep(0.5)
        return None, last_error

    def check(self, r: Result, load: Load, live: list[Node]) -> dict[int, str]:
        started = time.monotonic()
        try:
            return self._check(r, load, live)
        finally:
            r.extra["check_s"] = round(time.monotonic() - started, 1)

    def _check(self, r: Result, load: Load, live: list[Node]) -> dict[int, str]:
        acks = load.acks()
        r.acked = len(acks)
        for ref in load.refusals():
            r.refused[ref.code] = r.refused.get(ref.code, 0) + 1
        history: Optional[dict[int, str]] = None
        messages, why = self.stream_messages(load.channel)
        if messages is not None:
            history = {}
            for m in messages:
                try:
                    events = json.loads(m["data"])
                except ValueError:
                    r.notes.append(f"stream message {m['seq']} is not JSON")
                    continue
                for ev in events if isinstance(events, list) else []:
                    seq, tag = int(ev["seq"]), tag_of(ev) or f"<{ev.get('event')}>"
                    if seq in history:
                        r.forks += 1
                        r.notes.append(f"seq {seq} stored twice in the stream ({history[seq]!r}, {tag!r})")
                    history.setdefault(seq, tag)
            r.extra.setdefault("reference", "JetStream stream")
        else:
            r.notes.append(f"the stream could not be read ({why}); nodes' history is the reference")
        # Each live node's `history` must agree with the stream (it may lag).
        for n in live:
            node_history, source = self.read_history(load.channel, [n], timeout=5)
            if node_history is None:
                r.notes.append(f"history through {n.name} unreadable: {source}")
                continue
            if history is None:
                history = dict(node_history)
                r.extra.setdefault("reference", f"history through {n.name}")
                continue
            differ = [q for q, t in node_history.items() if history.get(q, t) != t]
            if differ:
                r.forks += len(differ)
                r.notes.append(f"history through {n.name} differs from the stream at seqs {differ[:5]}")
            missing = [q for q in history if q not in node_history]
            if missing:
                r.extra.setdefault("history_lag", {})[n.name] = f"{len(missing)} seqs missing, first {min(missing)}"
        if history is None:
            r.error = "neither the stream nor any node's history could be read"
            return {}
        seqs = sorted(history)
        if seqs and seqs != list(range(1, seqs[-1] + 1)):
            r.gaps += 1
            r.notes.append(f"history seqs are not 1..{seqs[-1]} ({len(seqs)} events)")
        by_seq: dict[int, set[str]] = {}
        by_tag: dict[str, int] = {}
        seqs_of: dict[str, list[int]] = {}
        for q, t in history.items():
            seqs_of.setdefault(t, []).append(q)
        applied_twice = [t for t, qs in seqs_of.items() if len(qs) > 1 and not t.startswith("<")]
        if applied_twice:
            r.duplicates += len(applied_twice)
            r.notes.append(f"commands stored twice: {applied_twice[:3]}")
        for a in acks:
            if a.probe:
                if a.tag not in seqs_of:
                    r.lost += 1
                    if len(r.notes) < 8:
                        r.notes.append(f"acknowledged probe '{a.tag}' (via {a.via}) is not in history")
                continue
            by_seq.setdefault(a.seq, set()).add(a.tag)
            by_tag[a.tag] = by_tag.get(a.tag, 0) + 1
            if history.get(a.seq) != a.tag:
                r.lost += 1
                if len(r.notes) < 8:
                    r.notes.append(f"acknowledged '{a.tag}' at seq {a.seq} (via {a.via}) but history has "
                                   f"{history.get(a.seq)!r}")
        twice = [s for s, tags in by_seq.items() if len(tags) > 1]
        if twice:
            r.forks += len(twice)
            r.notes.append(f"seqs acknowledged to two commands: {twice[:5]}")
        r.duplicates += sum(1 for c in by_tag.values() if c > 1)
        watches = [w.watch for w in load.writers] + [s.watch for s in load.subscribers]
        for w in watches:
            r.duplicates += w.duplicates
            r.reorders += w.reorders
            r.gaps += w.gaps
            r.notes += w.notes[:2]
            for seq, tag in w.seen.items():
                if history.get(seq) != tag:
                    r.forks += 1
                    if len(r.notes) < 8:
                        r.notes.append(f"{w.label} saw {tag!r} at seq {seq}, history has {history.get(seq)!r}")
        errors = [x.error for x in load.writers + load.subscribers if x.error]
        if errors:
            r.notes += errors[:3]
        return history

    # ---- (a) SIGKILL ----

    def kill_trial(self, n: int, host_loss: bool = False) -> Result:
        assert self.cluster
        kind = "host" if host_loss else "kill"
        channel = f"timers/{kind}-{self.run_id}-{n}"
        r = Result(kind, n, channel)
        live = self.live_nodes()
        load = Load(channel, self.endpoints(live), f"{kind}{n}", self.args.pace)
        errors = load.start()
        if errors:
            r.notes += errors
        try:
            if not warm_up(load, live):
                r.error = f"fewer than {2 * len(live)} acknowledgements in 8 s before the kill " \
                          f"(refusals: {summarise(load.refusals())})"
                return r
            owner_name, r.owner_how = self.find_owner(channel, live, load)
            r.owner = owner_name
            owner = next((x for x in live if x.name == owner_name), None)
            if owner is None:
                r.error = f"the owner {owner_name!r} ({r.owner_how}) is not a live node"
                return r
            leader = self.stream_leader(channel) if host_loss else None
            if host_loss and leader is None:
                r.error = "no stream leader found in /jsz"
                return r
            survivors = {x.name for x in live if x is not owner}
            t0 = time.monotonic()
            self.cluster.kill_node(owner)
            if leader is not None:
                self.cluster.kill_nats_server(leader)
                r.extra["nats_killed"] = self.cluster.nats_name(leader)
            limit = self.args.host_takeover_timeout if host_loss else self.args.takeover_timeout
            ack = load.first_ack_after(t0, survivors, limit)
            if ack is None:
                r.notes.append(f"no acknowledged command through {sorted(survivors)} within "
                               f"{limit} s of the kill (refusals after: "
                               f"{summarise([x for x in load.refusals() if x.sent > t0])})")
            else:
                r.takeover_ms = (ack.acked - t0) * 1000
                r.extra["takeover_via"] = ack.via
                load.wait_acks(len(load.acks()) + 5, 1.5)  # a little load after takeover
        finally:
            load.stop()
            r.extra["stop_s"] = load.stop_s
        writer_acks = [a for a in load.acks(probes=False) if a.sent > t0 and a.via in survivors]
        if writer_acks:
            r.extra["writer_takeover_ms"] = round((min(a.acked for a in writer_acks) - t0) * 1000)
        if host_loss and r.extra.get("nats_killed"):
            idx = [self.cluster.nats_name(i) for i in range(3)].index(r.extra["nats_killed"])
            self.cluster.start_nats_server(idx, wait=15)
        why = self.restart(owner)
        if why:
            r.error = f"restart of {owner.name} failed: {why}"
        survivors_now = [x for x in self.live_nodes()]
        self.check(r, load, survivors_now)
        if not why and not self.wait_ready(owner, 15):
            r.notes.append(f"{owner.name} not ready (/readyz) 15 s after its restart")
        return r

    # ---- (b) freeze ----

    def freeze_trial(self) -> Result:
        assert self.cluster
        channel = f"timers/freeze-{self.run_id}"
        r = Result("freeze", 1, channel)
        live = self.live_nodes()
        load = Load(channel, self.endpoints(live), "freeze", self.args.pace)
        r.notes += load.start()
        frozen: Optional[Node] = None
        t0, takeover_seq = time.monotonic(), None
        try:
            if not warm_up(load, live):
                r.error = "too few acknowledgements before the freeze"
                return r
            r.owner, r.owner_how = self.find_owner(channel, live, load)
            frozen = next((x for x in live if x.name == r.owner), None)
            if frozen is None:
                r.error = f"the owner {r.owner!r} is not a live node"
                return r
            survivors = {x.name for x in live if x is not frozen}
            t0 = time.monotonic()
            self.cluster.signal_node(frozen, signal.SIGSTOP)
            ack = load.first_ack_after(t0, survivors, self.args.freeze_s)
            time.sleep(max(0.0, t0 + self.args.freeze_s - time.monotonic()))
            t_cont = time.monotonic()
            self.cluster.signal_node(frozen, signal.SIGCONT)
            r.extra["frozen_s"] = round(t_cont - t0, 2)
            if ack is None:
                ack = load.first_ack_after(t0, survivors, self.args.takeover_timeout)
            if ack is not None:
                r.takeover_ms = (ack.acked - t0) * 1000
                takeover_seq = ack.seq
            time.sleep(3.0)  # the thawed node's writer keeps going
        finally:
            load.stop()
            r.extra["stop_s"] = load.stop_s
        if frozen is None:
            return r
        writer_acks = [a for a in load.acks(probes=False) if a.sent > t0 and a.via != frozen.name and a.via != "haproxy"]
        if writer_acks:
            r.extra["writer_takeover_ms"] = round((min(a.acked for a in writer_acks) - t0) * 1000)
        self.check(r, load, self.live_nodes())
        after = [a for a in load.acks() if a.via == frozen.name and a.sent >= t0]
        refs = [x for x in load.refusals() if x.via == frozen.name and x.sent >= t0]
        r.extra["thawed_acked"] = len(after)
        r.extra["thawed_refused"] = summarise(refs)
        attribution = self.writers_after(channel, frozen.name, takeover_seq)
        r.extra["stale_writes"] = attribution
        r.extra["writers"] = getattr(self, "last_writer_runs", "")
        if isinstance(attribution, int) and attribution > 0:
            r.extra["failed"] = True
        if not self.wait_ready(frozen, 15):
            r.notes.append(f"{frozen.name} not ready 15 s after SIGCONT")
        return r

    def stream_messages(self, channel: str) -> tuple[Optional[list[dict[str, Any]]], str]:
        """Every event message of the channel, read from JetStream itself
        (stream OT_EV_<p>, its subject), through any nats-server that answers."""
        assert self.cluster
        stream, subject = f"OT_EV_{partition_of(channel)}", subject_of(channel)
        why = ""
        for i in range(3):
            try:
                nats = NatsLite(self.cluster.nats_host, self.cluster.nats_port(i), timeout=3)
            except OSError as exc:
                why = f"NATS unreachable: {exc}"
                continue
            try:
                seq, messages = 1, []
                for _ in range(20000):  # bounded: a trial writes a few hundred
                    msg = nats.msg_get(stream, {"seq": seq, "next_by_subj": subject})
                    if msg is None:
                        break
                    messages.append(msg)
                    seq = int(msg["seq"]) + 1
                return messages, ""
            except (OSError, TimeoutError, ValueError) as exc:
                why = f"stream {stream} unreadable: {exc}"
            finally:
                nats.close()
        return None, why

    def writers_after(self, channel: str, node: str, takeover_seq: Optional[int]) -> Any:
        """How many event messages of the channel `node` (the frozen owner)
        wrote while another node owned the channel, from the writers the
        messages name (`OT-Writer: outatime-<node>`): the messages of a run
        of `node` that lies between runs of other nodes. Its first run is
        its own ownership before the freeze, and a last run is legitimate
        too (rebalancing hands the slot back once it has lived a few
        seconds). Else a text saying why it cannot be told."""
        assert self.cluster
        if takeover_seq is None:
            return "no takeover"
        messages, why = self.stream_messages(channel)
        if messages is None:
            return why
        if not messages or not all("OT-Writer" in m["headers"] for m in messages):
            return "not attributable (event messages carry no OT-Writer header)"
        writer = f"outatime-{node}"

        def first_seq(m: dict[str, Any]) -> int:
            try:
                return int(m["headers"].get("OT-Seq-First", "0"))
            except ValueError:
                return 0

        # Who wrote, in seq order, as runs (writer, messages, first seq).
        runs: list[list[Any]] = []
        for m in sorted(messages, key=first_seq):
            name = m["headers"]["OT-Writer"].removeprefix("outatime-")
            if runs and runs[-1][0] == name:
                runs[-1][1] += 1
            else:
                runs.append([name, 1, first_seq(m)])
        self.last_writer_runs = " ".join(f"{w}x{n}@{s}" for w, n, s in runs)
        # Stale: a run of `node` after another node took over and before
        # another node wrote again (it wrote in the middle of someone else's
        # ownership). Its first run is its own (it owned the channel before
        # the freeze), and so is a last run (the slot handed back to it).
        stale = 0
        for index, (name, count, _) in enumerate(runs):
            if name != node or index == 0:
                continue
            if any(other != node for other, _, _ in runs[:index]) and any(other != node for other, _, _ in runs[index + 1:]):
                stale += count
        return stale

    # ---- (c) link cut ----

    def cut_trial(self) -> Result:
        assert self.cluster
        r = Result("cut", 1, "")
        if self.netns is None:
            r.error = "skipped: no network namespace"
            return r
        n3 = self.cluster.node("n3")
        live = self.live_nodes()
        channel, owned = self.channel_owned_by("n3", "cut", live)
        r.channel = channel
        r.extra["channel_owned_by_n3"] = owned
        load = Load(channel, self.endpoints(live), "cut", self.args.pace)
        r.notes += load.start()
        try:
            if not warm_up(load, live):
                r.error = "too few acknowledgements before the cut"
                return r
            r.owner, r.owner_how = self.find_owner(channel, live, load)
            survivors = {x.name for x in live if x is not n3}
            t0 = time.monotonic()
            self.netns.cut()
            try:
                # n3's first coded refusal of a command sent after the cut.
                deadline = t0 + self.args.cut_s
                first: Optional[Refusal] = None
                while time.monotonic() < deadline and first is None:
                    refs = [x for x in load.refusals() if x.via == "n3" and x.sent > t0
                            and x.code not in ("timeout", "probe_timeout")]
                    first = min(refs, key=lambda x: x.at) if refs else None
                    time.sleep(0.02)
                if first is not None:
                    r.extra["n3_first_error_ms"] = round((first.at - t0) * 1000)
                    r.extra["n3_first_error"] = f"{first.code}: {first.message[:120]}"
                else:
                    r.extra["failed"] = True
                    r.notes.append(f"n3 answered no command with a coded error within {self.args.cut_s} s of the cut")
                if r.owner == "n3":
                    ack = load.first_ack_after(t0, survivors, max(0.1, deadline - time.monotonic()))
                    if ack is not None:
                        r.takeover_ms = (ack.acked - t0) * 1000
                time.sleep(max(0.0, deadline - time.monotonic()))
                r.extra["n3_acked_during_cut"] = len([a for a in load.acks() if a.via == "n3" and a.sent > t0])
            finally:
                self.netns.restore()
            t_back = time.monotonic()
            r.extra["n3_ready_after_restore_s"] = (round(time.monotonic() - t_back, 1)
                                                   if self.wait_ready(n3, 20) else "not within 20 s")
            time.sleep(1.0)
        finally:
            load.stop()
        self.check(r, load, self.live_nodes())
        return r


def warm_up(load: Load, live: list[Node], least_s: float = 1.0, timeout: float = 8.0) -> bool:
    """Load for at least `least_s`, until there are two acknowledgements per node (bounded)."""
    t0 = time.monotonic()
    ok = load.wait_acks(2 * len(live), timeout)
    time.sleep(max(0.0, t0 + least_s - time.monotonic()))
    return ok


def summarise(refs: list[Refusal]) -> str:
    counts: dict[str, int] = {}
    for x in refs:
        counts[x.code] = counts.get(x.code, 0) + 1
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------


def fmt_ms(v: Optional[float]) -> str:
    return "—" if v is None else f"{v:,.0f}"


def line_of(r: Result) -> str:
    status = "skip" if (r.error or "").startswith("skipped") else "ERROR" if r.error else ("FAIL" if r.failed else ("guess" if r.guessed else "ok"))
    return (f"{r.kind:6} {r.n:>3}  {status:5}  owner {str(r.owner):6} takeover {fmt_ms(r.takeover_ms):>7} ms  "
            f"acked {r.acked:>4}  lost {r.lost}  dup {r.duplicates}  reord {r.reorders}  gaps {r.gaps}  "
            f"forks {r.forks}  refused {r.refused or '{}'}"
            + (f"  {r.extra}" if r.extra else "") + (f"  error: {r.error}" if r.error else ""))


def summary(results: list[Result], kind: str) -> Optional[dict[str, Any]]:
    rs = [r for r in results if r.kind == kind and not (r.error or "").startswith("skipped")]
    if not rs:
        return None
    t = [r.takeover_ms for r in rs if r.takeover_ms is not None]
    return {
        "trials": len(rs),
        "taken_over": len(t),
        "min": min(t) if t else None, "median": statistics.median(t) if t else None, "max": max(t) if t else None,
        "over_5s": sum(1 for x in t if x > 5000) + (len(rs) - len(t)),
        "lost": sum(r.lost for r in rs), "duplicates": sum(r.duplicates for r in rs),
        "reorders": sum(r.reorders for r in rs), "gaps": sum(r.gaps for r in rs), "forks": sum(r.forks for r in rs),
        "acked": sum(r.acked for r in rs),
        "guessed": sum(1 for r in rs if r.guessed), "errors": sum(1 for r in rs if r.error),
        "how": sorted({r.owner_how.split(" (")[0] for r in rs if r.owner_how}),
    }


def markdown(results: list[Result], meta: dict[str, str]) -> str:
    out = [f"#### `make cluster-trials` ({meta['date']}, tools at {meta['commit']})", "",
           f"{meta['machine']}; nats-server {meta['nats']}, 3 servers, R3; 3 OutaTime nodes "
           f"({meta['server']}); haproxy {meta['haproxy']}. Owner found through: {meta['how']}.", "",
           "| trial | runs | taken over | takeover min / median / max (ms) | > 5 s or never | acked | lost | dup | reordered | gaps | forked |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    names = {"kill": "SIGKILL of the owner", "freeze": "SIGSTOP of the owner 5 s",
             "cut": "link cut (netns) of n3", "host": "owner + its stream's NATS leader"}
    for kind in ("kill", "freeze", "cut", "host"):
        s = summary(results, kind)
        if s is None:
            out.append(f"| {names[kind]} | skipped | | | | | | | | | |")
            continue
        out.append(f"| {names[kind]} | {s['trials']} | {s['taken_over']} | {fmt_ms(s['min'])} / "
                   f"{fmt_ms(s['median'])} / {fmt_ms(s['max'])} | {s['over_5s']} | {s['acked']} | {s['lost']} | "
                   f"{s['duplicates']} | {s['reorders']} | {s['gaps']} | {s['forks']} |")
    for r in results:
        if r.kind == "freeze" and not r.error:
            out.append("")
            out.append(f"Freeze: the thawed owner {r.owner} had {r.extra.get('thawed_acked')} commands acknowledged "
                       f"and refused {r.extra.get('thawed_refused')} after SIGCONT; its writes after takeover: "
                       f"{r.extra.get('stale_writes')}.")
        if r.kind == "cut" and not r.error:
            out.append("")
            out.append(f"Link cut: n3 (owner of the channel: {r.extra.get('channel_owned_by_n3')}) answered its first "
                       f"coded error {r.extra.get('n3_first_error_ms', '—')} ms after the cut "
                       f"({r.extra.get('n3_first_error', 'none')}); commands acknowledged by n3 during the cut: "
                       f"{r.extra.get('n3_acked_during_cut')}; seqs acknowledged twice: {r.forks}.")
    out.append("")
    out.append(f"Verdict: {meta['verdict']}")
    return "\n".join(out)


def verdict(results: list[Result]) -> tuple[int, str]:
    ran = [r for r in results if not (r.error or "").startswith("skipped")]
    if not ran:
        return 1, "FAIL: nothing ran"
    bad = [r for r in ran if r.failed]
    guessed = [r for r in ran if r.guessed]
    slow = [r for r in ran if r.kind == "kill" and r.takeover_ms is not None and r.takeover_ms > 5000]
    if bad or slow:
        return 1, (f"FAIL: {len(bad)} of {len(ran)} trials failed a check"
                   + (f", {len(slow)} SIGKILL takeovers over 5 s" if slow else "")
                   + (f"; the owner was guessed in {len(guessed)} (the server exposes no ownership)" if guessed else ""))
    if guessed:
        return 1, (f"INCONCLUSIVE: the owner was guessed in {len(guessed)} of {len(ran)} trials: the server "
                   "exposes no slot ownership (stats cluster owned_slots/owners, or KV OT_OWNERS)")
    return 0, f"PASS: {len(ran)} trials"


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------


def free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((host, port))
            return True
        except OSError:
            return False


def free_bases() -> tuple[int, int, int]:
    for _ in range(50):
        nats, node, proxy = (random.randrange(20000, 60000) for _ in range(3))
        ports = ([nats + i for i in range(3)] + [nats + 100 + i for i in range(3)] + [nats + 200 + i for i in range(3)]
                 + [node + i for i in range(3)] + [node + 100 + i for i in range(3)] + [proxy])
        if len(set(ports)) == len(ports) and all(free(p) for p in ports):
            return nats, node, proxy
    raise RuntimeError("no free ports found")


def git_commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(REPO_ROOT), "log", "-1", "--format=%h"], capture_output=True,
                              text=True, timeout=5).stdout.strip() or "?"
    except OSError:
        return "?"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--server", default=str(REPO_ROOT / ".build" / "release" / "outatime-server"))
    p.add_argument("--nats-server", default=shutil.which("nats-server") or "nats-server")
    p.add_argument("--haproxy", default=shutil.which("haproxy") or "/usr/sbin/haproxy")
    p.add_argument("--trials", type=int, default=20, help="SIGKILL trials (a)")
    p.add_argument("--host-loss-trials", type=int, default=3, help="owner + stream leader kills (d)")
    p.add_argument("--no-freeze", action="store_true", help="skip (b)")
    p.add_argument("--no-netns", action="store_true", help="skip (c): no network namespace")
    p.add_argument("--freeze-s", type=float, default=5.0)
    p.add_argument("--cut-s", type=float, default=8.0, help="how long the link stays cut")
    p.add_argument("--takeover-timeout", type=float, default=12.0, help="give up on a takeover after this")
    p.add_argument("--host-takeover-timeout", type=float, default=25.0,
                   help="the same for host loss (a stream without a leader stalls 4-9 s)")
    p.add_argument("--pace", type=float, default=0.03, help="seconds between one writer's commands")
    p.add_argument("--budget-s", type=float, default=570.0, help="no trial starts after this")
    p.add_argument("--port", type=int, default=0, help="haproxy's port (0: a free one)")
    p.add_argument("--node-port", type=int, default=0, help="first node's port, HTTP +100 (0: free ones)")
    p.add_argument("--nats-port", type=int, default=0, help="first nats-server's port (0: free ones)")
    p.add_argument("--dir", help="keep stores and logs in this folder")
    p.add_argument("--markdown", help="also write the markdown block here")
    p.add_argument("--json", help="write every trial's record here")
    p.add_argument("--seed", type=int, default=None)
    args = p.parse_args()
    if not 0 <= args.trials <= 200 or not 0 <= args.host_loss_trials <= 20:
        p.error("--trials 0..200, --host-loss-trials 0..20")
    for tool in (args.server, args.nats_server, args.haproxy):
        if not shutil.which(tool) and not os.access(tool, os.X_OK):
            p.error(f"{tool} not found (make release; make test-deps for nats-server; apt-get install haproxy)")
    found, version = nats_version(args.nats_server)
    if found < (2, 9, 21):
        p.error(f"{args.nats_server} is {version or 'unknown'}; cluster mode needs nats-server 2.9.21 or later")
    if not (args.port and args.node_port and args.nats_port):
        nats, node, proxy = free_bases()
        args.nats_port, args.node_port, args.port = args.nats_port or nats, args.node_port or node, args.port or proxy
    random.seed(args.seed)

    trials = Trials(args)

    def on_term(*_: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    code = 1
    try:
        trials.start_cluster()
        plan: list[tuple[str, int]] = [("kill", i + 1) for i in range(args.trials)]
        if not args.no_freeze:
            plan.append(("freeze", 1))
        plan.append(("cut", 1))
        plan += [("host", i + 1) for i in range(args.host_loss_trials)]
        names = {"kill": "timers/kill-{}-{}", "host": "timers/host-{}-{}", "freeze": "timers/freeze-{}",
                 "cut": "timers/cut-{}-0"}
        trials.prime([names[kind].format(trials.run_id, n) for kind, n in plan])
        for kind, n in plan:
            if trials.budget_left() < 20:
                log(f"budget of {args.budget_s:.0f} s spent: {kind} {n} and later skipped")
                trials.results.append(Result(kind, n, "", error="skipped: time budget spent"))
                continue
            if kind == "kill":
                r = trials.kill_trial(n)
            elif kind == "host":
                r = trials.kill_trial(n, host_loss=True)
            elif kind == "freeze":
                r = trials.freeze_trial()
            else:
                r = trials.cut_trial()
            trials.results.append(r)
            log(line_of(r))
            for note in r.notes[:4]:
                log(f"       {note}")
            # Every node back before the next trial.
            for node in trials.cluster.nodes if trials.cluster else []:
                if node.proc is None or node.proc.poll() is not None:
                    why = trials.restart(node)
                    if why:
                        log(f"       {node.name} could not be restarted: {why}")
        code, text = verdict(trials.results)
        ran = [r for r in trials.results if not (r.error or "").startswith("skipped")]
        print("\nsummary (ms):", flush=True)
        print(f"  {'trial':8} {'runs':>4} {'taken':>5} {'min':>7} {'median':>7} {'max':>7} {'>5s':>4} "
              f"{'acked':>6} {'lost':>4} {'dup':>4} {'reord':>5} {'gaps':>4} {'forks':>5} {'guessed':>7}")
        for kind in ("kill", "freeze", "cut", "host"):
            s = summary(ran, kind)
            if s:
                print(f"  {kind:8} {s['trials']:>4} {s['taken_over']:>5} {fmt_ms(s['min']):>7} "
                      f"{fmt_ms(s['median']):>7} {fmt_ms(s['max']):>7} {s['over_5s']:>4} {s['acked']:>6} "
                      f"{s['lost']:>4} {s['duplicates']:>4} {s['reorders']:>5} {s['gaps']:>4} {s['forks']:>5} "
                      f"{s['guessed']:>7}")
        hows = sorted({r.owner_how.split(" (")[0] for r in ran if r.owner_how})
        meta = {"date": time.strftime("%Y-%m-%d"), "commit": git_commit(),
                "machine": f"{os.cpu_count()} cores", "nats": version.replace("nats-server: ", ""),
                "server": ("release build" if "release" in Path(args.server).parts
                           else "debug build" if "debug" in Path(args.server).parts else os.path.basename(args.server)),
                "haproxy": "(local)",
                "how": ", ".join(hows) or "—", "verdict": text}
        try:
            hv = subprocess.run([args.haproxy, "-v"], capture_output=True, text=True, timeout=5).stdout.split()
            meta["haproxy"] = hv[2] if len(hv) > 2 else "?"
        except OSError:
            pass
        md = markdown(ran + [r for r in trials.results if r not in ran], meta)
        print("\nmarkdown for docs/CLUSTER.md:\n")
        print(md)
        if args.markdown:
            Path(args.markdown).write_text(md + "\n")
        if args.json:
            Path(args.json).write_text(json.dumps([r.__dict__ for r in trials.results], indent=1, default=str))
        if trials.ownership_fields_seen:
            print(f"\nstats cluster ownership fields seen: {sorted(trials.ownership_fields_seen)}")
        print(f"\n{text}  ({time.monotonic() - trials.started:.0f} s)")
        return code
    except KeyboardInterrupt:
        log("interrupted")
        return 1
    except RuntimeError as exc:
        log(f"cluster_trials: {exc}")
        return 1
    finally:
        if trials.cluster:
            trials.cluster.stop()
        if trials.netns:
            trials.netns.teardown()


if __name__ == "__main__":
    sys.exit(main())
