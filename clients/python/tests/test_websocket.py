"""The Python client's WebSocket transport (issue 28).

- ``WebSocketLinkTest``: the client's WebSocket link (the ``websockets``
  library's sync client under it) against a scripted peer that does the
  RFC 6455 upgrade by hand and then writes exactly the bytes a test gives:
  split and coalesced messages, a large message arriving slowly (read past
  the client's timeout, as over TCP), one that stops midway, binary and
  malformed messages, a Close without ``bye``, a refused upgrade, a peer
  that goes silent after ``hello`` (``unresponsive`` within seconds), TCP
  keepalive and ``TCP_USER_TIMEOUT`` on its socket as over TCP. No server.
- ``SecureWebSocketLinkTest``: ``wss://`` against a scripted TLS peer (the
  WebSocket run covers the server's ``--http-tls`` through test_tls.py):
  messages, a large one arriving slowly, an unknown authority refused as
  ``tls_failed``.
- ``WebSocketServerTest`` (the WebSocket run only, ``OUTATIME_TRANSPORT=ws``):
  what the real server's ``/ws`` does with messages the protocol forbids
  (invalid UTF-8, binary: an ``error`` push ``bad_frame``, ``bye
  protocol_error``, Close 1007 or 1003; over ``max_frame``:
  ``frame_too_large`` and 1009), that fragments are joined and Pings
  answered, that a foreign ``Origin`` is
  refused with 403 before upgrading, and that its ``bye`` comes before a
  Close frame carrying the reason.
- ``LazyImportTest``: the TCP client works without the ``websockets``
  package; ``transport="ws"`` then says what to install.

Every other end-to-end test runs over ``/ws`` too in the WebSocket run
(``make test-python`` runs the suite over TCP, then over WebSocket).
"""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import ssl
import struct
import tempfile
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

from outatime import Client, ConnectionClosed, OutaTimeError, OutaTimeTimeout, ProtocolError  # noqa: E402
from test_client import STOP_TIMEOUT, TRANSPORT, Push, ServerTestCase  # noqa: E402
from test_tls import TestCA  # noqa: E402

once_only = unittest.skipIf(TRANSPORT == "ws", "needs no server, whatever the transport: runs once, in the TCP run")

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455 §1.3


def ws_frame(payload: bytes, opcode: int = 1) -> bytes:
    """An unmasked, unfragmented frame, as a server sends it."""
    n = len(payload)
    if n < 126:
        head = struct.pack(">BB", 0x80 | opcode, n)
    elif n < 65536:
        head = struct.pack(">BBH", 0x80 | opcode, 126, n)
    else:
        head = struct.pack(">BBQ", 0x80 | opcode, 127, n)
    return head + payload


def text(obj: Any) -> bytes:
    return ws_frame(json.dumps(obj).encode())


class ScriptedPeer:
    """A loopback peer that answers the upgrade (or refuses it with
    ``refuse``), then lets the test write raw frames with :meth:`send`."""

    def __init__(self, refuse: Optional[bytes] = None, tls: Optional[ssl.SSLContext] = None) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.refuse = refuse
        self.tls = tls
        self.conn: Optional[socket.socket] = None
        self.request = b""
        self.upgraded = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        if self.tls is not None:
            try:
                conn = self.tls.wrap_socket(conn, server_side=True)
            except (ssl.SSLError, OSError):
                conn.close()
                return  # the client refused our certificate
        self.conn = conn
        while b"\r\n\r\n" not in self.request:
            chunk = conn.recv(4096)
            if not chunk:
                return
            self.request += chunk
        if self.refuse is not None:
            conn.sendall(self.refuse)
            conn.close()
            return
        head = self.request.split(b"\r\n\r\n", 1)[0].decode()
        key = next(line.split(":", 1)[1].strip() for line in head.split("\r\n")
                   if line.lower().startswith("sec-websocket-key:"))
        accept = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
        conn.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      f"Sec-WebSocket-Accept: {accept}\r\n\r\n").encode())
        self.upgraded.set()

    def send(self, data: bytes) -> None:
        assert self.conn is not None
        self.conn.sendall(data)

    def read_client_frame(self, timeout: float = 5.0) -> tuple[int, bool, bytes]:
        """One frame from the client: (opcode, masked, unmasked payload)."""
        assert self.conn is not None
        self.conn.settimeout(timeout)

        def exact(n: int) -> bytes:
            data = b""
            while len(data) < n:
                chunk = self.conn.recv(n - len(data))  # type: ignore[union-attr]
                if not chunk:
                    raise EOFError("the client closed")
                data += chunk
            return data

        b0, b1 = exact(2)
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack(">H", exact(2))[0]
        elif n == 127:
            n = struct.unpack(">Q", exact(8))[0]
        mask = exact(4) if b1 & 0x80 else b"\0\0\0\0"
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(exact(n)))
        return b0 & 0x0F, bool(b1 & 0x80), payload

    def answer_hello(self) -> None:
        """Answer the client's ``hello`` as a server would, then say nothing more."""
        self.upgraded.wait(10)
        opcode, _, payload = self.read_client_frame()
        request = json.loads(payload)
        assert (opcode, request["type"]) == (1, "hello"), (opcode, request)
        self.send(text({"type": "reply", "id": request["id"], "ok": True, "result": {
            "server": "outatime/0.1.0", "protocol": 1, "session": "fake-1", "heartbeat_ms": 15000,
            "max_frame": 65536, "role": "operate", "resume_key": "k" * 32}}))

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
        self.listener.close()


@once_only
class WebSocketLinkTest(unittest.TestCase):
    def make(self, timeout: float = 2.0) -> tuple[Client, ScriptedPeer]:
        peer = ScriptedPeer()
        self.addCleanup(peer.close)
        c = Client("127.0.0.1", peer.port, transport="ws", timeout=timeout)
        self.addCleanup(c.close)
        c._open()  # upgraded; no hello (the peer would not answer it)
        self.assertTrue(peer.upgraded.wait(5))
        return c, peer

    def test_upgrade_request_and_masked_text_frames(self) -> None:
        c, peer = self.make()
        head = peer.request.decode()
        self.assertTrue(head.startswith("GET /ws HTTP/1.1\r\n"), head)
        self.assertIn("Sec-WebSocket-Version: 13", head)
        self.assertNotIn("permessage-deflate", head)  # nothing to decline
        self.assertNotIn("Origin:", head)  # not a browser
        self.assertEqual(c.websocket_url(), f"ws://127.0.0.1:{peer.port}/ws")
        c.send({"type": "ping", "id": 7, "note": "é"})
        opcode, masked, payload = peer.read_client_frame()
        self.assertEqual((opcode, masked), (1, True))  # text, masked (RFC 6455 §5.3)
        self.assertEqual(json.loads(payload), {"type": "ping", "id": 7, "note": "é"})

    def test_messages_split_and_coalesced(self) -> None:
        c, peer = self.make()
        data = text({"type": "tick", "channel": "laps/a", "data": {"n": 1}}) + \
            text({"type": "message", "channel": "laps/a", "data": "é"})
        peer.send(data[:3])
        threading.Timer(0.05, lambda: peer.send(data[3:])).start()
        self.assertEqual(c.next_push(2.0)["data"], {"n": 1})
        self.assertEqual(c.next_push(2.0)["data"], "é")

    def test_large_message_arriving_slowly_is_read(self) -> None:
        # As over TCP (issue 27): the timeout bounds silence, not the whole
        # message. 64 KiB in 4 KiB pieces every 50 ms takes 0.8 s, four
        # times the timeout; the socket's byte count shows it coming.
        c, peer = self.make(timeout=0.2)
        data = text({"type": "message", "channel": "laps/a", "data": "x" * 65_000})

        def trickle() -> None:
            for start in range(0, len(data), 4096):
                peer.send(data[start:start + 4096])
                time.sleep(0.05)

        threading.Thread(target=trickle, daemon=True).start()
        self.assertEqual(len(c.next_push(0.5)["data"]), 65_000)

    def test_message_that_stops_midway_times_out(self) -> None:
        c, peer = self.make(timeout=0.3)
        data = text({"type": "message", "channel": "laps/a", "data": "x" * 10_000})
        peer.send(data[:5_000])
        t0 = time.monotonic()
        with self.assertRaises(OutaTimeTimeout) as cm:
            c.next_push(0.1)
        self.assertIn("stopped arriving", str(cm.exception))
        self.assertLess(time.monotonic() - t0, 5.0)
        self.assertFalse(c.connected)

    def test_binary_and_malformed_messages_are_protocol_errors(self) -> None:
        for frame in (ws_frame(b'{"type":"tick"}', opcode=2), ws_frame(b"[1,2]"), ws_frame(b"{}")):
            c, peer = self.make()
            peer.send(frame)
            with self.assertRaises(ProtocolError):
                c.next_push(2.0)
            self.assertFalse(c.connected)

    def test_close_without_bye_names_the_close_code(self) -> None:
        c, peer = self.make()
        peer.send(ws_frame(struct.pack(">H", 1011) + b"store failed", opcode=8))
        with self.assertRaises(ConnectionClosed) as cm:
            c.next_push(2.0)
        self.assertEqual(cm.exception.code, "connection_closed")
        self.assertIn("1011", cm.exception.message)
        self.assertIn("store failed", cm.exception.message)
        self.assertFalse(c.connected)

    def test_closed_before_answering_the_upgrade_is_retryable(self) -> None:
        # What a retry meets while the path is down or the server restarts:
        # a connection failure to retry, not a protocol error that ends it.
        peer = ScriptedPeer(refuse=b"")
        self.addCleanup(peer.close)
        c = Client("127.0.0.1", peer.port, transport="ws")
        with self.assertRaises(ConnectionClosed) as cm:
            c.connect()
        self.assertEqual(cm.exception.code, "connection_closed")
        self.assertTrue(cm.exception.retryable)
        self.assertIn("before answering the WebSocket upgrade", cm.exception.message)

    def test_refused_upgrade_names_the_status_and_body(self) -> None:
        body = b"origin http://evil.example is not allowed"
        peer = ScriptedPeer(refuse=b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: "
                            + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
        self.addCleanup(peer.close)
        c = Client("127.0.0.1", peer.port, transport="ws", origin="http://evil.example")
        with self.assertRaises(ConnectionClosed) as cm:
            c.connect()
        self.assertEqual(cm.exception.code, "upgrade_refused")
        self.assertIn("403", cm.exception.message)
        self.assertIn("evil.example is not allowed", cm.exception.message)
        self.assertIn("Origin: http://evil.example", peer.request.decode())
        self.assertFalse(c.connected)

    def test_a_silent_peer_is_detected_within_seconds(self) -> None:
        # Liveness is the client's, above the link: the probes go out as
        # text messages and the silence is measured on the socket's bytes.
        peer = ScriptedPeer()
        self.addCleanup(peer.close)
        c = Client("127.0.0.1", peer.port, transport="ws", timeout=5.0)
        self.addCleanup(c.close)
        threading.Thread(target=peer.answer_hello, daemon=True).start()
        c.connect()
        self.assertEqual(c.session, "fake-1")
        t0 = time.monotonic()
        with self.assertRaises(ConnectionClosed) as cm:
            while time.monotonic() - t0 < 40:
                try:
                    c.next_push(1.0)
                except OutaTimeTimeout:
                    continue
        self.assertEqual(cm.exception.code, "unresponsive", cm.exception.message)
        self.assertLess(time.monotonic() - t0, 8.0, "1 s of silence, then a probe that waits 2 s")
        self.assertFalse(c.connected)

    @unittest.skipUnless(hasattr(socket, "TCP_USER_TIMEOUT"), "Linux socket options")
    def test_socket_gets_keepalive_and_user_timeout(self) -> None:
        c, _ = self.make()
        sock = c._sock
        assert sock is not None
        self.assertEqual(sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE), 1)
        self.assertEqual(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE), 4)
        self.assertEqual(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT), 8000)
        self.assertEqual(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY), 1)

    def test_bad_arguments_name_the_value(self) -> None:
        with self.assertRaises(ValueError) as cm:
            Client(transport="websocket")
        self.assertIn("'websocket'", str(cm.exception))
        self.assertIn("'ws'", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            Client(transport="ws", path="ws")
        self.assertIn("'ws'", str(cm.exception))


@once_only
class SecureWebSocketLinkTest(unittest.TestCase):
    """``wss://`` (``tls=True``) against a scripted TLS peer: the same ``ssl``
    context, checks and ``tls_failed`` errors as TLS over TCP. (The real
    server's ``--http-tls`` is tested by test_tls.py in the WebSocket run.)"""

    def setUp(self) -> None:
        folder = tempfile.TemporaryDirectory(prefix="outatime-wss-")
        self.addCleanup(folder.cleanup)
        self.folder = Path(folder.name)
        self.ca = TestCA(self.folder)
        cert, key = self.ca.issue("localhost", ["localhost", "127.0.0.1"])
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(cert, key)

    def test_upgrade_and_messages_over_tls(self) -> None:
        peer = ScriptedPeer(tls=self.context)
        self.addCleanup(peer.close)
        c = Client("127.0.0.1", peer.port, transport="ws", tls=True, ca_file=self.ca.cert)
        self.addCleanup(c.close)
        self.assertEqual(c.websocket_url(), f"wss://127.0.0.1:{peer.port}/ws")
        threading.Thread(target=peer.answer_hello, daemon=True).start()
        c.connect()
        self.assertEqual(c.session, "fake-1")
        self.assertIsInstance(peer.conn, ssl.SSLSocket)
        peer.send(text({"type": "message", "channel": "laps/a", "data": "over TLS"}))
        self.assertEqual(c.next_push(5.0)["data"], "over TLS")

    def test_large_message_arriving_slowly_is_read_over_tls(self) -> None:
        # The TLS socket counts the bytes it decrypts, as the TCP one does.
        peer = ScriptedPeer(tls=self.context)
        self.addCleanup(peer.close)
        c = Client("127.0.0.1", peer.port, transport="ws", tls=True, ca_file=self.ca.cert, timeout=0.2)
        self.addCleanup(c.close)
        c._open()
        self.assertTrue(peer.upgraded.wait(5))
        data = text({"type": "message", "channel": "laps/a", "data": "x" * 65_000})

        def trickle() -> None:
            for start in range(0, len(data), 4096):
                peer.send(data[start:start + 4096])
                time.sleep(0.05)

        threading.Thread(target=trickle, daemon=True).start()
        self.assertEqual(len(c.next_push(0.5)["data"]), 65_000)

    def test_unknown_authority_is_tls_failed(self) -> None:
        other = TestCA(self.folder, "other")
        peer = ScriptedPeer(tls=self.context)
        self.addCleanup(peer.close)
        c = Client("127.0.0.1", peer.port, transport="ws", tls=True, ca_file=other.cert)
        with self.assertRaises(ConnectionClosed) as cm:
            c.connect()
        self.assertEqual(cm.exception.code, "tls_failed")
        self.assertIn("certificate verify failed", cm.exception.message)
        self.assertFalse(c.connected)


LAZY = r"""
import socket, sys
sys.modules["websockets"] = None          # as if the package were not installed
sys.path.insert(0, sys.argv[1])
import outatime
listener = socket.create_server(("127.0.0.1", 0))
c = outatime.Client("127.0.0.1", listener.getsockname()[1], transport="ws")
try:
    c.connect()
except outatime.OutaTimeError as exc:
    print(exc.code, exc.message)
"""


@once_only
class LazyImportTest(unittest.TestCase):
    def test_tcp_needs_no_websockets_and_ws_says_what_to_install(self) -> None:
        done = subprocess.run([sys.executable, "-c", LAZY, str(HERE.parent)], capture_output=True, text=True,
                              timeout=30)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertTrue(done.stdout.startswith("websockets_missing "), done.stdout)
        self.assertIn("tools/requirements-web.txt", done.stdout)


@unittest.skipUnless(TRANSPORT == "ws", "the server's /ws (run with OUTATIME_TRANSPORT=ws)")
class WebSocketServerTest(ServerTestCase):
    def refused(self, body: bytes, binary: bool = False) -> tuple[Push, Any]:
        """Send ``body`` as one message the protocol forbids; return the
        error push and the library's connection, once the server closed it."""
        c = self.client()
        link = c._link
        assert link is not None
        link.conn.send(body, text=not binary)  # type: ignore[attr-defined]
        error, _ = self.wait_for(c, lambda p: p["type"] == "error")
        self.assertEqual(error["error"]["code"], "bad_frame", error)
        bye, before = self.wait_for(c, lambda p: p["type"] == "bye")
        self.assertEqual((bye["reason"], before), ("protocol_error", []))
        self.assertFalse(c.connected)
        return error, link.conn  # type: ignore[attr-defined]

    def test_invalid_utf8_is_bad_frame_then_bye_and_close_1007(self) -> None:
        error, conn = self.refused(b'{"type":"ping","id":1,"x":"\xff\xfe"}')
        self.assertIn("UTF-8", error["error"]["message"])
        self.assertEqual((conn.close_code, conn.close_reason), (1007, "protocol_error"))

    def test_binary_message_is_bad_frame_then_bye_and_close_1003(self) -> None:
        error, conn = self.refused(b'{"type":"ping","id":1}', binary=True)
        self.assertIn("binary", error["error"]["message"])
        self.assertEqual((conn.close_code, conn.close_reason), (1003, "protocol_error"))

    def test_a_message_over_max_frame_is_frame_too_large_then_close_1009(self) -> None:
        c = self.client()
        link = c._link
        big = b'{"type":"ping","id":1,"pad":"' + b"x" * c.hello["max_frame"] + b'"}'
        c.send_raw(big)
        error, _ = self.wait_for(c, lambda p: p["type"] == "error")
        self.assertEqual(error["error"]["code"], "frame_too_large", error)
        bye, _ = self.wait_for(c, lambda p: p["type"] == "bye")
        self.assertEqual(bye["reason"], "protocol_error")
        conn = link.conn  # type: ignore[union-attr]
        self.assertEqual((conn.close_code, conn.close_reason), (1009, "protocol_error"))

    def test_fragments_are_joined_and_pings_answered(self) -> None:
        # The library fragments a message given as an iterable (RFC 6455
        # §5.4); the server joins the fragments into one frame body.
        c = self.client()
        link = c._link
        conn = link.conn  # type: ignore[union-attr]
        conn.send([b'{"type":"ping",', b'"id":"frag', b'mented"}'], text=True)
        c._awaited.add("fragmented")  # a request sent by hand: let its reply through
        reply = c._wait_reply("fragmented", time.monotonic() + 5.0, "ping")
        self.assertIs(reply["ok"], True, reply)
        self.assertIn("time", reply["result"])
        pong = conn.ping(b"88mph")  # a WebSocket Ping, below the protocol
        self.assertTrue(pong.wait(5.0), "no Pong to a Ping")
        self.assertIn("time", c.ping())

    def test_byte_count_matches_the_servers_frames(self) -> None:
        # The link tells a message in transit by the bytes not yet taken as
        # messages; against the server's own encoder (7-, 16- and 64-bit
        # lengths) nothing may be left over once all arrived.
        c = self.client()
        c.subscribe("laps/sizes")
        for size in (10, 300, 65_000):
            c.publish("laps/sizes", "x" * size)
            m, _ = self.wait_for(c, lambda p: p["type"] == "message")
            self.assertEqual(len(m["data"]), size)
        self.assertIn("time", c.ping())
        link = c._link
        counting = link.counting  # type: ignore[union-attr]
        self.assertEqual(counting.received - link.handshake_bytes - link.message_bytes, 0)  # type: ignore[union-attr]
        self.assertIsNone(link.partial())  # type: ignore[union-attr]

    def test_a_foreign_origin_is_refused_before_upgrading(self) -> None:
        c = self.client(connect=False, origin="http://evil.example")
        with self.assertRaises(ConnectionClosed) as cm:
            c.connect()
        self.assertEqual(cm.exception.code, "upgrade_refused")
        self.assertIn("HTTP 403", cm.exception.message)
        self.assertFalse(c.connected)
        own = self.client(connect=False, origin=f"http://127.0.0.1:{self.server.http_port}")
        own.connect()  # the page's own origin
        self.assertIn("time", own.ping())

    def test_shutdown_bye_then_close_frame_with_the_reason(self) -> None:
        c = self.client()
        link = c._link
        self.server.terminate()
        bye, _ = self.wait_for(c, lambda p: p["type"] == "bye", timeout=STOP_TIMEOUT)
        self.assertEqual(bye["reason"], "server_shutdown")
        conn = link.conn  # type: ignore[union-attr]
        self.assertEqual((conn.close_code, conn.close_reason), (1001, "server_shutdown"))  # Going Away
        with self.assertRaises(OutaTimeError):
            c.ping()


if __name__ == "__main__":
    unittest.main()
