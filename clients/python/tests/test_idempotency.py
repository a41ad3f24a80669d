"""Commands safe to retry (issue 27, protocol section 6.9): the Python
client's ``command(..., retry=True)`` sends an ``idempotency_key`` and sends
the command again after a reconnect, against real server processes.

A small relay in this file stands in for a network path that is cut under a
command: it passes the first ``command`` on to the server, drops the reply
and closes the link, so the command is applied but the client never hears
of it. It reads the client's frames of either transport (length-prefixed,
or the WebSocket upgrade and then masked frames), so the retries run over
``/ws`` too in the WebSocket run.
"""

from __future__ import annotations

import socket
import struct
import sys
import threading
import time
import unittest
from pathlib import Path
from typing import Callable, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_client import TRANSPORT, ServerTestCase  # noqa: E402

from outatime import Client, OutaTimeError, OutcomeUnknown  # noqa: E402

CH = "timers/retry"


class CuttingRelay:
    """A TCP relay to 127.0.0.1:``target()`` that cuts the link under the
    first ``command`` (forwarded, its reply dropped) and then calls
    ``on_cut``. With ``refuse_after_cut`` later connections are closed at
    once (the path stays down)."""

    def __init__(self, target: Callable[[], int], on_cut: Optional[Callable[[], None]] = None,
                 refuse_after_cut: bool = False) -> None:
        self.target = target
        self.on_cut = on_cut
        self.refuse_after_cut = refuse_after_cut
        self.cut = threading.Event()
        self.ready = threading.Event()  # set once on_cut has run
        self._lock = threading.Lock()
        self._cutting = False
        self._sockets: list[socket.socket] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self.listener.close()
        with self._lock:
            for s in self._sockets:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.cut.is_set() and (self.refuse_after_cut or not self.ready.is_set()):
                client.close()  # the path is down (or the server restarting)
                continue
            try:
                server = socket.create_connection(("127.0.0.1", self.target()), timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets += [client, server]
            swallow = threading.Event()
            threading.Thread(target=self._requests, args=(client, server, swallow), daemon=True).start()
            threading.Thread(target=self._replies, args=(server, client, swallow), daemon=True).start()

    @staticmethod
    def _read(sock: socket.socket, n: int) -> Optional[bytes]:
        data = b""
        while len(data) < n:
            try:
                chunk = sock.recv(n - len(data))
            except OSError:
                return None
            if not chunk:
                return None
            data += chunk
        return data

    def _requests(self, client: socket.socket, server: socket.socket, swallow: threading.Event) -> None:
        try:
            upgraded = TRANSPORT != "ws"
            while True:
                request = self._request(client, upgraded)
                if request is None:
                    return
                raw, body = request
                upgraded = True
                cutting = False
                if b'"command"' in body:
                    with self._lock:
                        cutting = not self._cutting
                        self._cutting = True
                if cutting:
                    swallow.set()  # before the server can answer
                server.sendall(raw)
                if cutting:
                    time.sleep(0.5)  # the server applies and commits it
                    self.cut.set()
                    return
        except OSError:
            return
        finally:
            for s in (client, server):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            if self.cut.is_set() and not self.ready.is_set() and swallow.is_set():
                if self.on_cut is not None:
                    self.on_cut()
                self.ready.set()

    @classmethod
    def _request(cls, client: socket.socket, upgraded: bool) -> Optional[tuple[bytes, bytes]]:
        """The next thing the client sends, as (its bytes, the frame body to
        look at): a length-prefixed frame, or over WebSocket first the
        upgrade request (passed on as is) and then one frame (unmasked to
        look at it, RFC 6455 §5.3)."""
        if TRANSPORT != "ws":
            header = cls._read(client, 4)
            body = cls._read(client, struct.unpack(">I", header)[0]) if header is not None else None
            return (header + body, body) if header is not None and body is not None else None
        if not upgraded:
            head = b""
            while not head.endswith(b"\r\n\r\n"):
                byte = cls._read(client, 1)
                if byte is None:
                    return None
                head += byte
            return head, b""
        start = cls._read(client, 2)
        if start is None:
            return None
        size = start[1] & 0x7F
        extended = cls._read(client, {126: 2, 127: 8}.get(size, 0)) if size >= 126 else b""
        if extended is None:
            return None
        if size >= 126:
            size = int.from_bytes(extended, "big")
        mask = cls._read(client, 4) if start[1] & 0x80 else b"\0\0\0\0"
        payload = cls._read(client, size) if mask is not None else None
        if mask is None or payload is None:
            return None
        return start + extended + mask + payload, bytes(b ^ mask[i % 4] for i, b in enumerate(payload))

    @staticmethod
    def _replies(server: socket.socket, client: socket.socket, swallow: threading.Event) -> None:
        while True:
            try:
                data = server.recv(65536)
            except OSError:
                break
            if not data:
                break
            if swallow.is_set():
                continue
            try:
                client.sendall(data)
            except OSError:
                break
        try:
            client.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class IdempotencyTest(ServerTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.relays: list[CuttingRelay] = []

    def tearDown(self) -> None:
        # A relay restarting the server (on_cut) must be done before the
        # server is stopped, even when the test failed first: else both
        # would stop and start it at once.
        for relay in self.relays:
            if relay.cut.is_set():
                relay.ready.wait(30)
        super().tearDown()
    def timers(self) -> list:
        c = self.client(name="checker")
        try:
            return c.get(CH)["state"]["timers"]
        finally:
            c.close()

    def test_a_keyed_repeat_is_answered_with_the_first_outcome(self) -> None:
        a = self.client()
        first = a.command(CH, "add", idempotency_key="py-1", event="Clock tower", remaining_s=600)
        self.assertEqual(a.last_seq, 1)
        self.assertFalse(a.last_repeated)
        b = self.client(name="other")
        again = b.command(CH, "add", idempotency_key="py-1", event="Clock tower", remaining_s=600)
        self.assertEqual(again, first)
        self.assertEqual(b.last_seq, 1)
        self.assertTrue(b.last_repeated)
        self.assertEqual(len(self.timers()), 1)
        with self.assertRaises(OutaTimeError) as ctx:
            b.command(CH, "remove", idempotency_key="py-1", id=1)
        self.assertEqual(ctx.exception.code, "conflict")
        with self.assertRaises(OutaTimeError) as ctx:
            b.command(CH, "add", idempotency_key="no spaces", event="x", remaining_s=1)
        self.assertEqual(ctx.exception.code, "invalid_request")
        self.assertIn("idempotency_key", ctx.exception.message)

    def test_retry_across_a_server_restart_between_send_and_reply(self) -> None:
        # The relay forwards the add, drops its reply, cuts the link, and the
        # server restarts on the same database (a new port) before the
        # client gets through again: the repeat is answered from storage.
        def restart() -> None:
            self.server.stop()
            self.server.start()

        relay = CuttingRelay(lambda: self.server.client_port, on_cut=restart)
        self.relays.append(relay)
        self.addCleanup(relay.close)
        c = Client("127.0.0.1", relay.port, transport=TRANSPORT, name="retrier", timeout=20.0)
        self.clients.append(c)
        c.connect()
        c.subscribe(CH)
        result = c.command(CH, "add", retry=True, event="Clock tower", remaining_s=600)
        self.assertTrue(relay.cut.is_set(), "the link was cut under the command")
        self.assertEqual(result["event"], "Clock tower")
        self.assertTrue(c.last_repeated, "answered as a repeat of the applied command")
        self.assertEqual(c.last_seq, 1)
        self.assertEqual(len(self.timers()), 1, "applied exactly once")
        self.assertTrue(c.channels[CH].subscribed, "resubscribed after the reconnect")

    def test_outcome_unknown_when_the_path_stays_down(self) -> None:
        relay = CuttingRelay(lambda: self.server.client_port, refuse_after_cut=True)
        self.addCleanup(relay.close)
        c = Client("127.0.0.1", relay.port, transport=TRANSPORT, name="retrier", timeout=3.0)
        self.clients.append(c)
        c.connect()
        with self.assertRaises(OutcomeUnknown) as ctx:
            c.command(CH, "add", retry=True, event="Clock tower", remaining_s=600)
        key = ctx.exception.idempotency_key
        self.assertIn(key, ctx.exception.message)
        self.assertEqual(len(self.timers()), 1, "the cut command was applied")
        # Settled with the same key, straight to the server: not applied twice.
        d = self.client(name="settler")
        d.command(CH, "add", idempotency_key=key, event="Clock tower", remaining_s=600)
        self.assertTrue(d.last_repeated)
        self.assertEqual(len(self.timers()), 1)

    def test_viewing_is_not_remembered(self) -> None:
        # start/stop act on the connection's own viewing: a key is not
        # remembered, so the same start on a new connection views again.
        a = self.client()
        a.command(CH, "add", event="Clock tower", remaining_s=600)
        a.subscribe(CH)
        a.command(CH, "start", idempotency_key="view-1", id=1)
        self.assertIsNone(a.last_seq)
        a.close()
        b = self.client(name="again")
        b.subscribe(CH)
        timer = b.command(CH, "start", retry=True, idempotency_key="view-1", id=1)
        self.assertFalse(b.last_repeated)
        self.assertEqual(timer["status"], "running")


if __name__ == "__main__":
    unittest.main()
