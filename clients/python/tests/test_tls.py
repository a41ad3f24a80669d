"""TLS tests of the Python client (``ssl``) against the real ``outatime-server``.

Python's :mod:`ssl` is the independent peer of the server's OpenSSL-over-libuv
TLS. Certificates come from a throwaway CA made with the ``openssl`` command
in each test's temporary folder.

In the WebSocket run (``OUTATIME_TRANSPORT=ws``) the server's HTTP listener
gets ``--http-tls`` and the TLS clients speak ``wss://`` to its ``/ws``, with
the same certificates and the same checks; the plaintext clients are TCP
ones then (that listener has no plaintext side).
"""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
import time
import unittest
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_client import PUSH_TIMEOUT, TRANSPORT, ServerProcess, ServerTestCase, tcp_only  # noqa: E402

from outatime import Client, ConnectionClosed, OutaTimeError  # noqa: E402


def openssl(*args: str) -> None:
    done = subprocess.run(["openssl", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise AssertionError(f"openssl {' '.join(args)} failed: {done.stderr}")


class TestCA:
    """A CA in ``folder`` and leaf certificates it signs (EC P-256)."""

    def __init__(self, folder: Path, name: str = "ca") -> None:
        self.folder = folder
        self.key = str(folder / f"{name}.key")
        self.cert = str(folder / f"{name}.pem")
        openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", self.key)
        openssl("req", "-x509", "-new", "-key", self.key, "-subj", f"/CN=OutaTime {name}", "-days", "2",
                "-addext", "basicConstraints=critical,CA:TRUE",
                "-addext", "keyUsage=critical,keyCertSign,cRLSign", "-out", self.cert)

    def issue(self, cn: str, names: list[str], expired: bool = False, client: bool = False) -> tuple[str, str]:
        stem = self.folder / f"{cn}-{'client' if client else 'server'}{'-expired' if expired else ''}"
        key, csr, cert, ext = (str(stem) + s for s in (".key", ".csr", ".pem", ".ext"))
        openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key)
        openssl("req", "-new", "-key", key, "-subj", f"/CN={cn}", "-out", csr)
        lines = ["basicConstraints=CA:FALSE", f"extendedKeyUsage={'clientAuth' if client else 'serverAuth'}"]
        if names:
            sans = ",".join(("IP:" if n[0].isdigit() else "DNS:") + n for n in names)
            lines.append(f"subjectAltName={sans}")
        Path(ext).write_text("\n".join(lines))
        openssl("x509", "-req", "-in", csr, "-CA", self.cert, "-CAkey", self.key, "-CAcreateserial",
                "-days", "-1" if expired else "2", "-extfile", ext, "-out", cert)
        return cert, key


class TLSServerTestCase(ServerTestCase):
    """A server with a plaintext listener and a TLS one (certificate for localhost and 127.0.0.1)."""

    expired = False
    names = ["localhost", "127.0.0.1"]
    mtls = False

    def server_extra_args(self) -> list[str]:
        import tempfile
        folder = tempfile.TemporaryDirectory(prefix="outatime-pki-")
        self.addCleanup(folder.cleanup)
        self.pki = Path(folder.name)
        self.ca = TestCA(self.pki)
        self.cert, self.key = self.ca.issue("localhost", self.names, expired=self.expired)
        args = ["--tls-port", "0", "--tls-cert", self.cert, "--tls-key", self.key, "--log-level", "info"]
        if self.mtls:
            args += ["--tls-client-ca", self.ca.cert]
        if TRANSPORT == "ws":
            args += ["--http-tls"]  # wss:// on the HTTP listener (--http 0, added by setUp)
        return args

    def secure(self, host: str = "localhost", name: Optional[str] = None, **kw: object) -> Client:
        """A TLS client, not connected: to the TLS port, or ``wss://`` to the
        HTTP listener's ``/ws`` in the WebSocket run."""
        port = self.server.http_port if TRANSPORT == "ws" else self.server.tls_port
        c = Client(host, port, name=name, tls=True, transport=TRANSPORT, **kw)  # type: ignore[arg-type]
        self.clients.append(c)
        return c

    def tls_client(self, name: str = "tls", host: str = "localhost", connect: bool = True, **kw: object) -> Client:
        kw.setdefault("ca_file", self.ca.cert)
        c = self.secure(host, name, **kw)
        if connect:
            c.connect()
        return c

    def client(self, name: Optional[str] = "tester", connect: bool = True, port: Optional[int] = None,
               **kw: object) -> Client:
        """A plaintext client: TCP in both runs (in the WebSocket run the
        HTTP listener speaks TLS only)."""
        kw.setdefault("transport", "tcp")
        return super().client(name, connect, self.server.port if port is None else port, **kw)


class TLSEndToEndTest(TLSServerTestCase):
    def test_hello_subscribe_and_live_event_over_tls(self) -> None:
        watcher = self.tls_client("watcher")
        self.assertEqual(watcher.hello["protocol"], 1)
        version = watcher._sock.version()  # type: ignore[union-attr]
        self.assertEqual(version, "TLSv1.3")
        ch = "delorean/main"
        watcher.subscribe(ch)
        # The command comes from a plaintext client: both listeners share the boards.
        operator = self.client("operator")
        operator.command(ch, "set_destination", time="1955-11-12T22:04:00Z")
        event, _ = self.wait_event(watcher, ch, "destination_set")
        self.assertEqual(event["channel"], ch)
        # And the other way round: a TLS client's command reaches a TLS watcher.
        second = self.tls_client("second", host="127.0.0.1")
        second.command(ch, "set_destination", time="1985-10-26T01:21:00Z")
        event, _ = self.wait_event(watcher, ch, "destination_set")
        self.assertIn("1985-10-26", str(event))

    @tcp_only("a raw TCP socket on the TLS port")
    def test_plaintext_client_on_the_tls_port_is_closed_cleanly(self) -> None:
        body = b'{"type":"hello","id":1,"protocol":1}'
        with socket.create_connection(("127.0.0.1", self.server.tls_port), timeout=PUSH_TIMEOUT) as sock:
            sock.sendall(struct.pack(">I", len(body)) + body)
            received = b""
            deadline = time.monotonic() + PUSH_TIMEOUT
            closed = False
            while time.monotonic() < deadline:
                try:
                    chunk = sock.recv(4096)
                except ConnectionResetError:
                    closed = True
                    break
                if not chunk:
                    closed = True
                    break
                received += chunk
            self.assertTrue(closed, "the server closes a plaintext connection on its TLS port")
            self.assertNotIn(b'"type"', received, "no JSON frame is sent in clear on the TLS port")
        # The server is unharmed: TLS and plaintext clients still work.
        self.assertEqual(self.tls_client("after").ping().get("pong", True), True)
        self.client("plain").ping()
        deadline = time.monotonic() + PUSH_TIMEOUT
        while "TLS connection failed" not in self.server.log_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertIn("TLS connection failed", self.server.log_text())

    def test_unknown_authority_is_refused_with_a_clear_message(self) -> None:
        other = TestCA(self.pki, "other")
        c = self.secure(ca_file=other.cert)
        with self.assertRaises(ConnectionClosed) as caught:
            c.connect()
        self.assertEqual(caught.exception.code, "tls_failed")
        self.assertIn("certificate verify failed", str(caught.exception))


class TLSWrongNameTest(TLSServerTestCase):
    names = ["elsewhere.example"]

    def test_certificate_for_another_name_is_refused(self) -> None:
        c = self.secure(ca_file=self.ca.cert)
        with self.assertRaises(ConnectionClosed) as caught:
            c.connect()
        self.assertEqual(caught.exception.code, "tls_failed")
        self.assertIn("mismatch", str(caught.exception))
        self.assertIn("localhost", str(caught.exception))


class TLSExpiredTest(TLSServerTestCase):
    expired = True

    def test_expired_certificate_is_refused(self) -> None:
        c = self.secure(ca_file=self.ca.cert)
        with self.assertRaises(ConnectionClosed) as caught:
            c.connect()
        self.assertEqual(caught.exception.code, "tls_failed")
        self.assertIn("certificate has expired", str(caught.exception))


class MutualTLSTest(TLSServerTestCase):
    mtls = True

    def test_client_certificate_is_required_and_accepted(self) -> None:
        without = self.secure(ca_file=self.ca.cert)
        with self.assertRaises(ConnectionClosed) as caught:
            without.connect()
        self.assertEqual(caught.exception.code, "tls_failed")
        self.assertIn("CERTIFICATE_REQUIRED", str(caught.exception).upper())

        cert, key = self.ca.issue("board-1", [], client=True)
        with_cert = self.tls_client("board", cert_file=cert, key_file=key)
        self.assertEqual(with_cert.hello["protocol"], 1)
        with_cert.subscribe("timers/main")

        stranger = TestCA(self.pki, "stranger")
        cert, key = stranger.issue("intruder", [], client=True)
        foreign = self.secure(ca_file=self.ca.cert, cert_file=cert, key_file=key)
        with self.assertRaises(ConnectionClosed) as caught:
            foreign.connect()
        self.assertEqual(caught.exception.code, "tls_failed")


class CertificateSubjectTest(TLSServerTestCase):
    """A tokens-file entry naming a client certificate's subject stands in for a token."""

    mtls = True

    def server_extra_args(self) -> list[str]:
        tokens = self.tmp / "tokens.json"
        tokens.write_text(json.dumps([
            {"certificate_subject": "CN=board-1", "name": "Lobby board", "role": "watch", "channels": ["starport/*"]},
            {"token": "s3cr3t-marty-Qm7vX2kR9tL4wZ8p", "name": "Marty", "role": "operate"},
        ]))
        return super().server_extra_args() + ["--tokens", str(tokens)]

    def test_listed_certificate_is_admitted_without_a_token(self) -> None:
        cert, key = self.ca.issue("board-1", [], client=True)
        board = self.tls_client("self-declared", cert_file=cert, key_file=key)
        self.assertEqual(board.hello["role"], "watch")
        r = board.subscribe("starport/hv")
        self.assertEqual(r["watchers"], [{"session": board.session, "name": "Lobby board"}])
        with self.assertRaises(OutaTimeError) as caught:
            board.publish("starport/hv", "hi")
        self.assertEqual(caught.exception.code, "forbidden")
        with self.assertRaises(OutaTimeError) as caught:
            board.get("timers/main")
        self.assertEqual(caught.exception.code, "forbidden")
        # A token decides alone, beside the same certificate.
        marty = self.tls_client("marty", cert_file=cert, key_file=key, token="s3cr3t-marty-Qm7vX2kR9tL4wZ8p")
        self.assertEqual(marty.hello["role"], "operate")

    def test_unlisted_certificate_and_plaintext_are_refused(self) -> None:
        cert, key = self.ca.issue("board-2", [], client=True)
        other = self.tls_client("board-2", cert_file=cert, key_file=key, connect=False)
        with self.assertRaises(OutaTimeError) as caught:
            other.connect()
        self.assertEqual(caught.exception.code, "unauthorized")
        self.assertIn("'CN=board-2'", str(caught.exception))
        plain = Client("127.0.0.1", self.server.port, name="Lobby board")
        self.clients.append(plain)
        with self.assertRaises(OutaTimeError) as caught:
            plain.connect()
        self.assertEqual(caught.exception.code, "unauthorized")


class TLSOnlyTest(TLSServerTestCase):
    def server_extra_args(self) -> list[str]:
        return super().server_extra_args() + ["--no-plain"]

    def test_tls_only_server_has_no_plaintext_listener(self) -> None:
        self.assertEqual(self.server.port, 0, "no 'listening on' line without a plaintext listener")
        self.assertEqual(self.tls_client("only").hello["protocol"], 1)


if __name__ == "__main__":
    unittest.main()


def _frame(message: dict) -> bytes:
    body = json.dumps(message, separators=(",", ":")).encode()
    return struct.pack(">I", len(body)) + body


def _read_frame(sock: socket.socket) -> dict:
    def exactly(count: int) -> bytes:
        data = b""
        while len(data) < count:
            chunk = sock.recv(count - len(data))
            if not chunk:
                raise AssertionError(f"connection closed after {len(data)} of {count} bytes")
            data += chunk
        return data
    (length,) = struct.unpack(">I", exactly(4))
    return json.loads(exactly(length))


@tcp_only("raw TLS sockets sending length-prefixed frames to the TLS port")
class TLSReadBudgetTest(TLSServerTestCase):
    """``--read-budget-us 1``: the server reads one connection per loop
    iteration, the others in turns. TLS connections (Python's ``ssl``)
    sending at once are all answered, in order; ``stats`` counts the reads
    put off."""

    def server_extra_args(self) -> list[str]:
        return super().server_extra_args() + ["--read-budget-us", "1"]

    def test_tls_connections_sending_at_once_are_all_answered_in_order(self) -> None:
        import ssl
        context = ssl.create_default_context(cafile=self.ca.cert)
        sockets = []
        for index in range(4):
            raw = socket.create_connection(("127.0.0.1", self.server.tls_port), timeout=PUSH_TIMEOUT)
            sock = context.wrap_socket(raw, server_hostname="localhost")
            self.addCleanup(sock.close)
            sock.sendall(_frame({"type": "hello", "id": 0, "protocol": 1, "name": f"tls-{index}"}))
            self.assertTrue(_read_frame(sock).get("ok"), "hello")
            sockets.append(sock)
        observer = self.client("observer")
        deferred = 0
        # About 40 KiB of pings per connection, written at once: several reads
        # of 16 KiB each, so the four overlap (bounded rounds; the first
        # nearly always defers).
        for round_ in range(5):
            if deferred:
                break
            ids = [round_ * 10_000 + n for n in range(800)]
            batch = b"".join(_frame({"type": "ping", "id": i}) for i in ids)
            for sock in sockets:
                sock.sendall(batch)
            for sock in sockets:
                got = [_read_frame(sock) for _ in ids]
                self.assertEqual([f.get("id") for f in got], ids)
                self.assertTrue(all(f.get("ok") for f in got))
            deferred = observer.stats()["reads_deferred"]
        self.assertGreater(deferred, 0, "no read was deferred in 5 rounds")
