"""Liveness (issue 27): dead paths are noticed within seconds on both sides,
and a reconnecting client resumes its session instead of being listed twice.

- ``SilentPeerTest``: a loopback peer answers ``hello``, then neither reads
  nor writes; the client raises ``unresponsive`` within a few seconds (before
  the fix: only the server's 30 s idle timeout would end it, and a client
  waiting for pushes never noticed).
- ``DeadPathTest``: a real server; watchers connected from a network
  namespace (veth pair) whose path back is then blackholed. A watcher on the
  host sees them ``left`` within 15 s (TCP_USER_TIMEOUT for the one with
  ticks in flight, keepalive for the idle one), and the countdown only one
  of them viewed stops. Before the fix: 30 s (the idle timeout). Needs root
  and ``ip netns``; skipped with the reason otherwise.
- ``ResumeTest``: ``hello`` ``resume`` with the previous ``resume_key``
  replaces the old connection (``bye replaced``; ``left`` before ``joined``);
  a wrong key changes nothing.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
import unittest
from pathlib import Path
from typing import Any, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from outatime import Client, ConnectionClosed, OutaTimeError  # noqa: E402
from test_client import ServerTestCase, tcp_only  # noqa: E402


def frame(obj: Any) -> bytes:
    body = json.dumps(obj).encode()
    return struct.pack(">I", len(body)) + body


class SilentPeer:
    """A loopback TCP peer that answers ``hello`` (and ``ping``s while
    ``answering``), then goes silent: reads nothing more, writes nothing."""

    def __init__(self, answering_for: float = 0.0) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.answering_for = answering_for
        self.conn: Optional[socket.socket] = None
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        conn, _ = self.listener.accept()
        self.conn = conn
        buf = b""
        until: Optional[float] = None
        while until is None or time.monotonic() < until:
            conn.settimeout(0.05)
            try:
                chunk = conn.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                return
            if not chunk:
                return
            buf += chunk
            while len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">I", buf[:4])[0]:
                n = struct.unpack(">I", buf[:4])[0]
                req = json.loads(buf[4:4 + n])
                buf = buf[4 + n:]
                if req.get("type") == "hello":
                    until = time.monotonic() + self.answering_for
                    conn.sendall(frame({"type": "reply", "id": req["id"], "ok": True, "result": {
                        "server": "outatime/0.1.0", "protocol": 1, "session": "fake-1", "heartbeat_ms": 15000,
                        "max_frame": 65536, "role": "operate", "resume_key": "k" * 32}}))
                elif req.get("type") == "ping" and "id" in req:
                    conn.sendall(frame({"type": "reply", "id": req["id"], "ok": True, "result": {"time": "x"}}))
        # Silent from here on: the socket stays open, nothing is read or sent.

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
        self.listener.close()


@tcp_only("a scripted silent TCP peer and the socket's TCP options")
class SilentPeerTest(unittest.TestCase):
    def test_a_silent_peer_is_detected_within_seconds(self) -> None:
        peer = SilentPeer()
        self.addCleanup(peer.close)
        c = Client("127.0.0.1", peer.port, timeout=5.0)
        self.addCleanup(c.close)
        c.connect()
        t0 = time.monotonic()
        with self.assertRaises(ConnectionClosed) as cm:
            while time.monotonic() - t0 < 40:  # what a program waiting for pushes does
                try:
                    c.next_push(1.0)
                except OutaTimeError as exc:
                    if exc.code != "timeout":
                        raise
        took = time.monotonic() - t0
        self.assertEqual(cm.exception.code, "unresponsive", cm.exception.message)
        self.assertTrue(cm.exception.retryable)
        # 1 s of silence, then a probe that waits max(2 s, RTT-derived).
        self.assertLess(took, 8.0, "well under the old 30 s")
        self.assertFalse(c.connected)

    def test_a_quiet_live_peer_is_kept_and_measured(self) -> None:
        peer = SilentPeer(answering_for=60.0)
        self.addCleanup(peer.close)
        c = Client("127.0.0.1", peer.port, timeout=5.0)
        self.addCleanup(c.close)
        c.connect()
        self.assertEqual(c.resume_key, "k" * 32)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 4.0:
            try:
                c.next_push(0.5)
            except OutaTimeError as exc:
                self.assertEqual(exc.code, "timeout", exc.message)
        self.assertTrue(c.connected)
        self.assertGreaterEqual(c._probes, 2, "a probe after each second of silence")
        self.assertIsNotNone(c.srtt)
        self.assertLess(c.srtt, 1.0)

    @unittest.skipUnless(hasattr(socket, "TCP_USER_TIMEOUT"), "Linux socket options")
    def test_socket_gets_keepalive_and_user_timeout(self) -> None:
        peer = SilentPeer(answering_for=60.0)
        self.addCleanup(peer.close)
        c = Client("127.0.0.1", peer.port, timeout=5.0)
        self.addCleanup(c.close)
        c.connect()
        sock = c._sock
        assert sock is not None
        self.assertEqual(sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE), 1)
        self.assertEqual(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE), 4)
        self.assertEqual(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL), 1)
        self.assertEqual(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT), 4)
        self.assertEqual(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT), 8000)


class ResumeTest(ServerTestCase):
    CH = "timers/resume"

    def test_resume_replaces_the_old_session_before_the_new_one_joins(self) -> None:
        a = self.client(name="Alice")
        a.subscribe(self.CH)
        b = self.client(name="Bob")
        b.subscribe(self.CH)
        joined, _ = self.wait_for(a, lambda p: p["type"] == "presence")
        old = b.session
        self.assertEqual([w["session"] for w in joined["joined"]], [old])
        key = b.hello["resume_key"]
        self.assertRegex(key, r"^[A-Za-z0-9_-]{22,}$")
        self.assertNotEqual(key, a.hello["resume_key"])

        # A wrong key (and a well-formed one of nobody) changes nothing.
        stranger = self.client(name="Stranger", connect=False)
        stranger.resume_key = "A" * 32
        stranger.connect()
        stranger.close()
        stranger.resume_key = key[:-2] + ("AA" if key[-2:] != "AA" else "BB")
        stranger.connect()
        self.assertEqual(b.ping().keys(), {"time"})  # Bob is still there

        # Bob's replacement comes with the key, as a reconnecting client does.
        b2 = self.client(name="Bob", connect=False)
        b2.resume_key = key
        b2.connect()
        b2.subscribe(self.CH)
        watchers = {w["session"] for w in b2.channels[self.CH].watchers}
        left, before = self.wait_for(a, lambda p: p["type"] == "presence" and p["left"])
        self.assertEqual([w["session"] for w in left["left"]], [old])
        self.assertEqual(left["joined"], [])
        self.assertFalse([p for p in before if p["type"] == "presence"], f"left must come first: {before}")
        joined2, _ = self.wait_for(a, lambda p: p["type"] == "presence" and p["joined"])
        self.assertEqual([w["session"] for w in joined2["joined"]], [b2.session])
        self.assertNotIn(old, watchers, "the new session's own list has no ghost of it")

        # The old connection was told why, and must not come back.
        bye, _ = self.wait_for(b, lambda p: p["type"] == "bye")
        self.assertEqual(bye["reason"], "replaced")
        with self.assertRaises(ConnectionClosed) as cm:
            b.ping()
        self.assertEqual(cm.exception.code, "replaced")
        self.assertFalse(cm.exception.retryable)

    def test_connect_again_resumes_a_link_given_up_locally(self) -> None:
        # What happens after ``unresponsive``: the client gave the link up,
        # the server still holds it (it heard no FIN), connect() comes back.
        a = self.client(name="Alice")
        a.subscribe(self.CH)
        b = self.client(name="Bob")
        b.subscribe(self.CH)
        self.wait_for(a, lambda p: p["type"] == "presence" and p["joined"])
        old_session = b.session
        old_link, b._link = b._link, None  # forgotten, not closed: no FIN
        self.addCleanup(old_link.close, False)
        b.connect()
        b.recover(self.CH)
        left, before = self.wait_for(a, lambda p: p["type"] == "presence" and p["left"])
        self.assertEqual([w["session"] for w in left["left"]], [old_session])
        self.assertFalse([p for p in before if p["type"] == "presence"], before)
        joined, _ = self.wait_for(a, lambda p: p["type"] == "presence" and p["joined"])
        self.assertEqual([w["session"] for w in joined["joined"]], [b.session])
        self.assertEqual({w["session"] for w in b.channels[self.CH].watchers}, {a.session, b.session})

    def test_a_replaced_client_does_not_come_back_to_retry(self) -> None:
        from outatime import OutcomeUnknown
        c = self.client(name="Doc")
        c.subscribe(self.CH)
        newer = self.client(name="Doc", connect=False)
        newer.resume_key = c.resume_key
        newer.connect()  # c's connection now holds a bye replaced, unread
        with self.assertRaises(OutcomeUnknown) as cm:
            c.command(self.CH, "add", event="Clock tower", remaining_s=60, retry=True)
        self.assertEqual(cm.exception.cause.code if cm.exception.cause else None, "replaced")
        self.assertFalse(c.connected)
        self.assertEqual(newer.ping().keys(), {"time"}, "the newer connection was not replaced back")
        self.assertEqual(newer.get(self.CH)["state"]["timers"], [], "nothing applied")

    def test_resume_must_be_a_short_string(self) -> None:
        raw = self.client(name=None, connect=False)
        raw._open()  # the transport without hello: hello is sent by hand
        for bad in (5, "x" * 65, ["k"]):
            with self.assertRaises(OutaTimeError) as cm:
                raw.request("hello", protocol=1, resume=bad)
            self.assertEqual(cm.exception.code, "invalid_request")
            self.assertIn("resume", cm.exception.message)
        self.assertTrue(raw.request("hello", protocol=1, resume="not a key")["resume_key"])


NS_SCRIPT = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
from outatime import Client
host, port = sys.argv[2], int(sys.argv[3])
ticking = Client(host, port, name="ticking", probe_after=0, tcp_liveness=None)
ticking.connect()
ticking.subscribe("timers/cut")
t = ticking.command("timers/cut", "add", event="Clock tower", remaining_s=3600)
ticking.command("timers/cut", "start", id=t["id"])
idle = Client(host, port, name="idle", probe_after=0, tcp_liveness=None)
idle.connect()
idle.subscribe("laps/cut")
print(ticking.session, idle.session, flush=True)
time.sleep(120)   # reads nothing, sends nothing: the server's side decides
"""


@tcp_only("the server's TCP keepalive and TCP_USER_TIMEOUT on the protocol port, from a network namespace")
class DeadPathTest(ServerTestCase):
    """Watchers behind a path that dies without a FIN: the server drops them
    within seconds (keepalive and TCP_USER_TIMEOUT, its defaults)."""

    server_args = ["--host", "0.0.0.0", "--allow-anonymous", "--allow-plaintext"]

    def setUp(self) -> None:
        pid = os.getpid()
        self.ns = f"otlive{pid}"
        self.veth = f"otl{pid % 100000}"
        # A /30 of its own per process, away from the WAN rig's addresses.
        self.SERVER_IP, self.PEER_IP = f"10.231.{pid % 250}.1", f"10.231.{pid % 250}.2"
        try:
            self.ip("netns", "add", self.ns)
        except (OSError, subprocess.SubprocessError) as exc:
            self.skipTest(f"cannot create a network namespace (needs root and iproute2): {exc} {getattr(exc, 'stderr', '') or ''}")
        self.addCleanup(self.ip, "netns", "del", self.ns, check=False)
        try:
            self.ip("link", "add", self.veth + "h", "type", "veth", "peer", "name", self.veth + "n")
        except subprocess.SubprocessError as exc:
            self.skipTest(f"cannot create a veth pair: {exc} {getattr(exc, 'stderr', '') or ''}")
        self.addCleanup(self.ip, "link", "del", self.veth + "h", check=False)
        self.ip("link", "set", self.veth + "n", "netns", self.ns)
        self.ip("addr", "add", self.SERVER_IP + "/30", "dev", self.veth + "h")
        self.ip("link", "set", self.veth + "h", "up")
        self.ip("-n", self.ns, "addr", "add", self.PEER_IP + "/30", "dev", self.veth + "n")
        self.ip("-n", self.ns, "link", "set", self.veth + "n", "up")
        self.ip("-n", self.ns, "link", "set", "lo", "up")
        super().setUp()

    @staticmethod
    def ip(*args: str, check: bool = True) -> None:
        done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10)
        if check and done.returncode != 0:
            raise subprocess.CalledProcessError(done.returncode, ["ip", *args], done.stdout, done.stderr.strip())

    def test_cut_watchers_leave_within_seconds_and_their_countdown_stops(self) -> None:
        host = self.client(name="host")
        host.subscribe("timers/cut")
        host.subscribe("laps/cut")
        peer = subprocess.Popen(
            ["ip", "netns", "exec", self.ns, sys.executable, "-c", NS_SCRIPT,
             str(HERE.parent), self.SERVER_IP, str(self.server.port)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(peer.wait, 10)
        self.addCleanup(peer.kill)
        line = peer.stdout.readline() if peer.stdout else ""
        sessions = line.split()
        self.assertEqual(len(sessions), 2, f"peer failed: {line!r} {peer.stderr.read() if not line else ''}")
        ticking, idle = sessions
        self.wait_event(host, "timers/cut", "timer_started")
        self.wait_for(host, lambda p: p["type"] == "presence" and p["channel"] == "laps/cut"
                      and [w["session"] for w in p["joined"]] == [idle])
        time.sleep(1.5)  # ticks flowing, and acknowledged, before the cut

        # The path dies: nothing from the namespace reaches the host any more
        # (no FIN, no reset, the link stays up).
        self.ip("-n", self.ns, "route", "add", "blackhole", self.SERVER_IP + "/32")
        cut = time.monotonic()
        gone: dict[str, float] = {}
        stopped: Optional[float] = None
        while (len(gone) < 2 or stopped is None) and time.monotonic() - cut < 40:
            try:
                p = host.next_push(1.0)
            except OutaTimeError as exc:
                self.assertEqual(exc.code, "timeout", exc.message)
                continue
            if p["type"] == "presence":
                for w in p["left"]:
                    gone.setdefault(w["session"], time.monotonic() - cut)
            elif p["type"] == "event" and p["event"] == "timer_stopped":
                stopped = time.monotonic() - cut
        self.assertEqual(set(gone), {ticking, idle}, f"left after the cut: {gone}")
        # Defaults: user timeout 8 s (ticks in flight), keepalive 4 + 4 × 1 s
        # (idle); before them, the 30 s idle timeout.
        self.assertLess(gone[ticking], 15.0, f"ticking watcher left {gone[ticking]:.1f} s after the cut")
        self.assertLess(gone[idle], 15.0, f"idle watcher left {gone[idle]:.1f} s after the cut")
        self.assertIsNotNone(stopped)
        self.assertLess(stopped, 15.0, "the countdown only the cut watcher viewed stops")
        closes = host.stats()["closes"]
        self.assertEqual(closes.get("timed_out"), 2, f"both dropped by the kernel's verdict: {closes}")


if __name__ == "__main__":
    unittest.main()
