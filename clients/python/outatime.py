"""A small, synchronous Python client for the OutaTime wire protocol, version 1.

Written from ``protocol/PROTOCOL.md`` alone, with the Python 3.11 standard
library only (the WebSocket transport adds the ``websockets`` package). One
:class:`Client` is one TCP connection (plain, or TLS with ``tls=True``,
through :mod:`ssl`) to ``outatime-server``, or one WebSocket connection with
``transport="ws"``:

    from outatime import Client, OutaTimeError

    with Client(name="Marty") as c:                 # connect + hello
        c.subscribe("delorean/main")                # snapshot -> c.channels[...]
        c.command("delorean/main", "set_destination", time="1985-10-26T01:21:00Z")
        c.command("delorean/main", "travel")
        while True:
            push = c.next_push(timeout=5.0)         # event / tick / message / ...
            if push["type"] == "event" and push["event"] == "time_travel":
                break

Framing (section 1): every frame is a 4-byte unsigned big-endian length ``N``
followed by ``N`` bytes of UTF-8 JSON encoding one object. Frames from the
server are accepted up to 16 MiB; anything longer is a protocol error.

WebSocket (PROTOCOL.md, "WebSocket transport"): ``Client(host, http_port,
transport="ws")`` connects to ``ws://host:http_port/ws`` on the server's HTTP
listener (``--http``); ``tls=True`` makes it ``wss://``. One text message is
one frame body, both ways. The framing is the ``websockets`` package's sync
client (pinned in ``tools/requirements-web.txt``), an RFC 6455
implementation independent of the server's, imported only when this
transport is used: the TCP client needs nothing beyond the standard library.
Everything above the framing (requests, pushes, heartbeat, liveness,
reconnect, retries, trackers) is the same code for both transports: a link
object (``_LengthPrefixedLink`` or ``_WebSocketLink``) reads and writes frame
bodies and knows nothing else.

The client is single-threaded and not thread-safe: frames are only read while
a method of the client runs. Replies are matched to requests by ``id``; pushes
that arrive while waiting for a reply are queued (and applied to the
:class:`Channel` trackers at once) and handed out by :meth:`Client.next_push`.
While the client waits for frames it sends a bare ``{"type": "ping"}``
heartbeat whenever half of the server's ``heartbeat_ms`` has passed since the
last frame it sent (section 3), so a client that keeps calling
:meth:`Client.next_push` is never closed for idleness.

Liveness (section 3, "Liveness"): while waiting, a ``ping`` probes the link
once nothing has arrived for ``probe_after`` seconds (default 1), and when
nothing at all arrives within the probe timeout — smoothed RTT + 4 × RTT
variance + 0.2 s, measured on ``hello`` and ``ping`` replies as TCP does, at
least ``probe_timeout_floor`` (default 2 s) — the connection is closed and
:class:`ConnectionClosed` with code ``unresponsive`` is raised: a dead path
is noticed within about 3 s instead of never. The socket also gets TCP
keepalive and ``TCP_USER_TIMEOUT`` (Linux), over either transport. After a reconnect
(:meth:`Client.connect` again) ``hello`` carries the previous ``resume_key``,
so the server drops the old session at once instead of listing it twice.
"""

from __future__ import annotations

import collections
import json
import socket
import ssl
import struct
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Deque, Dict, Iterator, Optional, Union

__all__ = [
    "Client",
    "Channel",
    "OutaTimeError",
    "ProtocolError",
    "ConnectionClosed",
    "NOT_RETRYABLE",
    "TCP_LIVENESS",
    "OutaTimeTimeout",
    "OutcomeUnknown",
    "PROTOCOL_VERSION",
    "MAX_SERVER_FRAME",
    "DEFAULT_PORT",
    "TRANSPORTS",
]

PROTOCOL_VERSION = 1
"""The protocol version this module speaks (``hello``'s ``protocol``)."""

DEFAULT_PORT = 1985
"""The server's default TCP port."""

TRANSPORTS = ("tcp", "ws")
"""``Client(transport=...)``: length-prefixed frames over TCP (or TLS), or
WebSocket text messages on the server's HTTP listener (``--http``)."""

MAX_SERVER_FRAME = 16 * 1024 * 1024
"""The longest frame body accepted from the server: 16 MiB (section 1)."""

MAX_QUEUED_PUSHES = 100_000
"""Pushes kept for :meth:`Client.next_push`; past that the oldest are dropped
(counted in ``Client.dropped_pushes``). Channel trackers have applied them
already, so their state stays exact: only the unread queue is bounded."""

CLIENT_NAME = "outatime-python/0.1"
"""Sent as ``hello``'s ``client`` field."""

PUSH_TYPES = frozenset({"event", "tick", "message", "dropped", "presence", "error", "bye"})
"""Push types defined by protocol v1. Others are queued too (and otherwise
ignored), since later revisions may add types."""

NOT_RETRYABLE = frozenset({"unauthorized", "unsupported_protocol", "replaced"})
"""``bye`` reasons (and :class:`ConnectionClosed` codes) after which connecting
again cannot help: a refusal would only be refused again, and ``replaced``
means a newer connection resumed this session (section 6.1) — coming back
would replace that one in turn."""

TCP_LIVENESS = (4, 1, 4, 8000)
"""The socket's TCP keepalive (idle seconds, interval seconds, probes) and
``TCP_USER_TIMEOUT`` (ms), like the server's defaults: the kernel fails the
connection within about 8 s when the server stops acknowledging."""

_LENGTH = struct.Struct(">I")

JSON = Any
"""Any JSON value as decoded by :mod:`json`."""


# --------------------------------------------------------------------------
# Exceptions
# --------------------------------------------------------------------------


class OutaTimeError(Exception):
    """An error answered by the server, or found by this client.

    ``code`` is the stable snake_case code from the server's ``error.code``
    (section 10), or one of this module's own codes (``protocol_error``,
    ``connection_closed``, ``timeout``, ...). ``message`` is for people; its
    wording may change, so programs should match on ``code``.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code: str = code
        self.message: str = message


class ProtocolError(OutaTimeError):
    """The server sent something this client cannot parse (a bad length, a
    body that is not a JSON object, a frame without a string ``type``). The
    connection is closed when this is raised."""

    def __init__(self, message: str) -> None:
        super().__init__("protocol_error", message)


class ConnectionClosed(OutaTimeError):
    """The connection is gone. ``code`` is the ``bye`` reason when the server
    said goodbye (``server_shutdown``, ``idle_timeout``, ``unauthorized``, ...),
    else ``connection_closed``."""

    def __init__(self, code: str = "connection_closed", message: str = "the connection is closed") -> None:
        super().__init__(code, message)

    @property
    def reason(self) -> str:
        """The ``bye`` reason, or ``connection_closed``."""
        return self.code

    @property
    def retryable(self) -> bool:
        """Whether connecting again can help (see :data:`NOT_RETRYABLE`)."""
        return self.code not in NOT_RETRYABLE


class OutcomeUnknown(OutaTimeError):
    """A retried :meth:`Client.command` got no answer before the client's
    ``timeout``: it may or may not have been applied. Call ``command`` again
    with the same ``idempotency_key`` (this exception's attribute): the
    server applies it at most once and answers with its outcome. ``cause``
    is the last failure seen."""

    def __init__(self, idempotency_key: str, cause: Optional[OutaTimeError]) -> None:
        super().__init__(
            "outcome_unknown",
            "the command may or may not have been applied"
            + (f" ({cause.code}: {cause.message})" if cause is not None else "")
            + f"; send it again with idempotency_key={idempotency_key!r} to apply it at most once")
        self.idempotency_key: str = idempotency_key
        self.cause: Optional[OutaTimeError] = cause


class OutaTimeTimeout(OutaTimeError, TimeoutError):
    """A bounded wait ran out (also catchable as the built-in ``TimeoutError``)."""

    def __init__(self, message: str) -> None:
        OutaTimeError.__init__(self, "timeout", message)


# --------------------------------------------------------------------------
# Channel tracking
# --------------------------------------------------------------------------


@dataclass
class Channel:
    """What the client knows about one subscribed channel.

    The tracker keeps the channel's last full snapshot (:attr:`state`, the
    state at :attr:`snapshot_seq`) and every durable event received after it
    (:attr:`events`, in seq order). It does not interpret the kinds' events:
    applying ``events`` in order to ``state`` gives the state at :attr:`seq`
    (section 7). :attr:`seq` is the last seq seen, which :meth:`Client.recover`
    sends as ``since``.

    Events with a seq not above :attr:`seq` are dropped (already known). An
    event whose seq jumps past ``seq + 1`` is still recorded but sets
    :attr:`gap` -- events were missed; call :meth:`Client.recover`.
    """

    name: str
    kind: str
    seq: int = 0
    snapshot_seq: int = 0
    state: Optional[Dict[str, JSON]] = None
    events: list[Dict[str, JSON]] = field(default_factory=lambda: [])
    watchers: list[Dict[str, JSON]] = field(default_factory=lambda: [])
    last_tick: Optional[JSON] = None
    gap: bool = False
    subscribed: bool = False
    messages: bool = True
    """Whether the subscription takes ``message`` pushes (``subscribe``'s ``messages``)."""
    messages_dropped: int = 0
    """``message`` pushes the server dropped for this connection while its
    output was backed up, summed from ``dropped`` pushes (section 12)."""

    def apply_subscribe_result(self, result: Dict[str, JSON]) -> None:
        """Take in a ``subscribe`` result in any of its three shapes (6.3)."""
        self.kind = str(result.get("kind", self.kind))
        self.watchers = list(result.get("watchers") or [])
        self.subscribed = True
        seq = int(result["seq"])
        if result.get("recovered") is True:
            # The events since our seq replace a snapshot: keep ours, append.
            for ev in result.get("events") or []:
                self._add_event(ev)
            self.seq = seq
            self.gap = False
        else:
            self.state = result.get("state")
            self.snapshot_seq = seq
            self.seq = seq
            self.events = []
            self.gap = False

    def apply_event(self, push: Dict[str, JSON]) -> bool:
        """Record an ``event`` push; return False when it was already known."""
        return self._add_event(push)

    def _add_event(self, ev: Dict[str, JSON]) -> bool:
        seq = int(ev["seq"])
        if seq <= self.seq:
            return False
        if seq > self.seq + 1:
            self.gap = True
        entry = {k: ev.get(k) for k in ("seq", "event", "data", "at")}
        self.events.append(entry)
        self.seq = seq
        return True

    def apply_presence(self, push: Dict[str, JSON]) -> None:
        """Update :attr:`watchers` from a ``presence`` push."""
        left = {w.get("session") for w in push.get("left") or []}
        kept = [w for w in self.watchers if w.get("session") not in left]
        known = {w.get("session") for w in kept}
        for w in push.get("joined") or []:
            if w.get("session") not in known:
                kept.append(w)
                known.add(w.get("session"))
        self.watchers = kept


# --------------------------------------------------------------------------
# Transports: the seam between the client and the wire
# --------------------------------------------------------------------------


class _Link:
    """One open connection as a carrier of frame bodies, whatever the framing.

    The client above it (requests, pushes, heartbeat, liveness, reconnect,
    retries, trackers) is the same for every transport. A link raises this
    module's exceptions (:class:`ConnectionClosed`, :class:`ProtocolError`,
    :class:`OutaTimeTimeout`); the client then drops it.
    """

    sock: socket.socket
    last_received: float = 0.0
    """``time.monotonic()`` of the last bytes received (any: a part of a frame counts)."""

    def read_frame(self, wait: float) -> Optional[Union[bytes, str]]:
        """One whole frame body, waiting at most ``wait`` seconds (0: only
        what has arrived already); None when none is complete by then."""
        raise NotImplementedError

    def partial(self) -> Optional[str]:
        """When part of a frame has arrived and not the rest: how much, for
        an error message; else None."""
        raise NotImplementedError

    def write_frame(self, body: bytes, timeout: float) -> None:
        """Send one frame body; ``timeout`` bounds the send."""
        raise NotImplementedError

    def close(self, graceful: bool) -> None:
        """Close (idempotent). ``graceful``: the transport's closing handshake, if it has one."""
        raise NotImplementedError


class _LengthPrefixedLink(_Link):
    """Section 1 over TCP or TLS: a 4-byte unsigned big-endian length, then
    the body. Bodies up to :data:`MAX_SERVER_FRAME` are accepted."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray()
        self.last_received = time.monotonic()

    def _take(self) -> Optional[bytes]:
        if len(self.buf) < 4:
            return None
        (length,) = _LENGTH.unpack(self.buf[:4])
        if length > MAX_SERVER_FRAME:
            raise ProtocolError(f"the server announced a frame of {length} bytes; the limit is {MAX_SERVER_FRAME}")
        if length < 2:
            raise ProtocolError(f"the server sent a frame of {length} bytes; a JSON object needs at least 2")
        if len(self.buf) < 4 + length:
            return None
        body = bytes(self.buf[4:4 + length])
        del self.buf[:4 + length]
        return body

    def read_frame(self, wait: float) -> Optional[Union[bytes, str]]:
        body = self._take()
        if body is not None or wait <= 0:
            return body
        need = 4 + _LENGTH.unpack(self.buf[:4])[0] - len(self.buf) if len(self.buf) >= 4 else 4
        self.sock.settimeout(wait)
        try:
            chunk = self.sock.recv(min(max(65536, need), 1 << 20))
        except socket.timeout:
            return None
        except ssl.SSLError as exc:
            # e.g. the server refused our client certificate (TLS 1.3
            # reports that after the handshake, on the first read).
            raise ConnectionClosed("tls_failed", f"reading failed: {exc}") from exc
        except OSError as exc:
            raise ConnectionClosed("connection_closed", f"reading failed: {exc}") from exc
        if not chunk:
            raise ConnectionClosed("connection_closed", "the server closed the connection without a bye")
        self.last_received = time.monotonic()
        self.buf += chunk
        return self._take()

    def partial(self) -> Optional[str]:
        if not self.buf:
            return None
        if len(self.buf) < 4:
            return f"{len(self.buf)} of a frame's 4 header bytes read"
        length = _LENGTH.unpack(self.buf[:4])[0]
        return f"{len(self.buf) - 4} of a {length}-byte frame's body read"

    def write_frame(self, body: bytes, timeout: float) -> None:
        try:
            self.sock.settimeout(timeout)
            self.sock.sendall(_LENGTH.pack(len(body)) + body)
        except socket.timeout as exc:
            raise OutaTimeTimeout(f"sending a frame took longer than {timeout} s") from exc
        except ssl.SSLError as exc:
            raise ConnectionClosed("tls_failed", f"sending failed: {exc}") from exc
        except OSError as exc:
            raise ConnectionClosed("connection_closed", f"sending failed: {exc}") from exc

    def close(self, graceful: bool) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


class _Arrivals:
    """What came in on a WebSocket link's socket: how many bytes, when the
    last ones did, and a TLS failure met while reading. The library's reader
    thread writes them (through the sockets below), the client reads them:
    one writer, so plain attributes suffice."""

    def __init__(self) -> None:
        self.received = 0
        self.last_received = time.monotonic()
        self.failure: Optional[ssl.SSLError] = None

    def note(self, data: bytes) -> None:
        if data:
            self.received += len(data)
            self.last_received = time.monotonic()


class _CountingSocket(socket.socket):
    """The TCP socket of a ``ws://`` link: notes its arrivals."""

    arrivals: _Arrivals

    def recv(self, bufsize: int, flags: int = 0) -> bytes:  # type: ignore[override]
        data = super().recv(bufsize, flags)
        self.arrivals.note(data)
        return data


class _CountingSSLSocket(ssl.SSLSocket):
    """The TLS socket of a ``wss://`` link: notes its arrivals, and keeps the
    TLS failure the library's reader thread would swallow (TLS 1.3 reports a
    refused client certificate only on the first read, during the upgrade).
    ``ssl`` makes the instance (``SSLContext.sslsocket_class``), so each link
    gets a subclass whose ``arrivals`` are its own."""

    arrivals: _Arrivals

    def recv(self, buflen: int = 1024, flags: int = 0) -> bytes:
        try:
            data = super().recv(buflen, flags)
        except ssl.SSLError as exc:
            self.arrivals.failure = exc
            raise
        self.arrivals.note(data)
        return data


def _websocket_frame_size(payload: int) -> int:
    """Bytes on the wire of an unmasked, unfragmented server frame (RFC 6455 §5.2)."""
    return payload + (2 if payload < 126 else 4 if payload < 65536 else 10)


class _WebSocketLink(_Link):
    """Protocol frames as WebSocket text messages (PROTOCOL.md, "WebSocket
    transport"), framed by the ``websockets`` library's sync client: an RFC
    6455 implementation independent of the server's. One text message is one
    frame body, both ways; messages up to :data:`MAX_SERVER_FRAME` are
    accepted. The library's own keepalive pings are off: the protocol's
    heartbeat and liveness probes (section 3) work as over TCP.

    The library reads the socket in a thread of its own and hands out whole
    messages. To see a large message arriving slowly (issue 27: the timeout
    bounds silence, not a whole frame), the socket counts the bytes it
    receives: those not yet accounted for by the handshake and the messages
    taken are a message in transit. Over ``wss://`` with an ``ssl_context``
    of the caller's (not ours to change) only whole messages count.
    """

    CLOSE_TIMEOUT = 0.25
    """The longest a graceful close waits for the server's Close frame. Short:
    with unread messages queued the library reads nothing more, so the
    server's Close could only arrive after this wait anyway."""

    def __init__(self, conn: Any, counting: Optional[_Arrivals], url: str) -> None:
        self.conn = conn
        self.sock = conn.socket
        self.url = url
        self.counting = counting
        self.handshake_bytes = counting.received if counting is not None else 0
        self.message_bytes = 0
        self.last_received = time.monotonic()

    @staticmethod
    def open(client: "Client", sock: socket.socket) -> "_WebSocketLink":
        try:
            from websockets import exceptions as wsx
            from websockets.sync.client import connect as ws_connect
        except ImportError as exc:
            sock.close()
            raise OutaTimeError(
                "websockets_missing",
                f"transport='ws' needs the websockets package "
                f"(python3 -m pip install --require-hashes -r tools/requirements-web.txt): {exc}") from exc
        url = client.websocket_url()
        try:
            context = client._make_ssl_context() if client.tls else None
        except ConnectionClosed:
            sock.close()
            raise
        arrivals = _Arrivals()
        counting = _CountingSocket(sock.family, sock.type, sock.proto, fileno=sock.detach())
        counting.arrivals = arrivals
        counting.settimeout(None)  # the library's reader thread blocks in select, then reads
        counted = True
        if context is not None:
            if client.ssl_context is None:  # ours: count (and keep failures) on the TLS socket
                context.sslsocket_class = type("_LinkSSLSocket", (_CountingSSLSocket,), {"arrivals": arrivals})
            else:
                counted = False
        where = f"{client.host}:{client.port}"
        try:
            conn = ws_connect(
                url, sock=counting, legacy=True,
                ssl=context,
                server_hostname=client.host if client.tls else None,
                origin=client.origin,  # type: ignore[arg-type]
                compression=None,          # the server declines permessage-deflate anyway
                proxy=None,                # never a proxy from the environment: the socket is ours
                user_agent_header=CLIENT_NAME,
                open_timeout=client.timeout,
                ping_interval=None,        # section 3's heartbeat and probes instead
                close_timeout=_WebSocketLink.CLOSE_TIMEOUT,
                max_size=MAX_SERVER_FRAME,
            )
        except wsx.InvalidStatus as exc:
            response = exc.response
            body = bytes(response.body or b"")[:200].decode("utf-8", "replace").strip()
            raise ConnectionClosed(
                "upgrade_refused",
                f"{url} refused the WebSocket upgrade: HTTP {response.status_code} {response.reason_phrase}"
                + (f": {body}" if body else "")) from exc
        except ssl.SSLCertVerificationError as exc:
            raise ConnectionClosed(
                "tls_failed", f"TLS handshake with {where} failed: certificate verify failed: {exc.verify_message}") from exc
        except ssl.SSLError as exc:
            raise ConnectionClosed("tls_failed", f"TLS handshake with {where} failed: {exc}") from exc
        except TimeoutError as exc:
            raise OutaTimeTimeout(f"the WebSocket upgrade of {url} took longer than {client.timeout} s") from exc
        except (OSError, wsx.WebSocketException) as exc:
            if arrivals.failure is not None:  # e.g. our client certificate refused after the handshake
                raise ConnectionClosed("tls_failed", f"TLS with {where} failed: {arrivals.failure}") from exc
            if isinstance(exc, wsx.InvalidMessage) and isinstance(exc.__cause__, EOFError):
                # Closed before any answer (a server going down, a path
                # cut): a failed connection, to retry, not a wrong answer.
                raise ConnectionClosed(
                    "connection_closed", f"{url} closed the connection before answering the WebSocket upgrade") from exc
            if isinstance(exc, wsx.InvalidHandshake):
                raise ProtocolError(f"{url} answered the WebSocket upgrade wrongly: {exc}") from exc
            raise ConnectionClosed("connect_failed", f"cannot open {url}: {exc}") from exc
        return _WebSocketLink(conn, arrivals if counted else None, url)

    def _closed(self, exc: Exception, doing: str) -> OutaTimeError:
        from websockets import exceptions as wsx
        cause = exc.__cause__
        if isinstance(cause, TimeoutError) and doing == "sending":
            return OutaTimeTimeout(f"sending a frame over {self.url} timed out")
        if isinstance(exc, wsx.ConnectionClosed):
            close = exc.rcvd or exc.sent
            how = (f"close {close.code}" + (f" {close.reason!r}" if close.reason else "")) if close else "no close frame"
            return ConnectionClosed("connection_closed", f"{doing} failed: the WebSocket closed ({how})")
        return ConnectionClosed("connection_closed", f"{doing} failed: {exc}")

    def _note_arrivals(self) -> None:
        if self.counting is not None:
            self.last_received = max(self.last_received, self.counting.last_received)

    def read_frame(self, wait: float) -> Optional[Union[bytes, str]]:
        from websockets import exceptions as wsx
        from websockets.protocol import State
        try:
            try:
                message = self.conn.recv(timeout=max(0.0, wait))
            except TimeoutError:
                self._note_arrivals()
                if self.conn.state is State.OPEN:
                    return None
                # A Close arrived and nothing can follow it. The library
                # waits for the server to end the TCP connection (RFC 6455
                # §7.1.1) without a bound: end it here, then take the
                # close code and reason.
                self.sock.shutdown(socket.SHUT_RDWR)
                message = self.conn.recv(timeout=self.CLOSE_TIMEOUT)
        except wsx.ConnectionClosed as exc:
            raise self._closed(exc, "reading") from exc
        except (TimeoutError, OSError) as exc:
            raise ConnectionClosed("connection_closed", f"reading failed after a Close: {exc}") from exc
        if self.counting is None:
            self.last_received = time.monotonic()
        self._note_arrivals()
        if not isinstance(message, str):
            raise ProtocolError(f"the server sent a binary WebSocket message ({len(message)} bytes); "
                                "protocol frames are text messages")
        body = message.encode("utf-8")
        self.message_bytes += _websocket_frame_size(len(body))
        return body

    def partial(self) -> Optional[str]:
        if self.counting is None:
            return None
        pending = self.counting.received - self.handshake_bytes - self.message_bytes
        # A control frame (a Close, a Pong) is at most 127 bytes and never
        # handed out: so little is not taken for a message in transit.
        if pending <= 127:
            return None
        return f"{pending} bytes of a WebSocket message read"

    def write_frame(self, body: bytes, timeout: float) -> None:
        from websockets import exceptions as wsx
        try:
            try:
                self.sock.settimeout(timeout)
            except OSError:
                pass  # the library closed it: send() says how
            self.conn.send(body, text=True)
        except wsx.ConnectionClosed as exc:
            raise self._closed(exc, "sending") from exc
        except OSError as exc:
            raise ConnectionClosed("connection_closed", f"sending failed: {exc}") from exc

    def close(self, graceful: bool) -> None:
        if not graceful:
            try:
                self.sock.shutdown(socket.SHUT_RDWR)  # the reader thread sees EOF at once
            except OSError:
                pass
        self.conn.close()


# --------------------------------------------------------------------------
# The client
# --------------------------------------------------------------------------


RequestId = Union[int, str]


class Client:
    """One connection to an OutaTime server.

    ``timeout`` bounds every wait for the server (connecting, each reply); a
    method that runs out raises :class:`OutaTimeTimeout`. ``name`` is the
    display name others see; ``token`` is needed when the server has a tokens
    file (section 4).

    ``tls=True`` speaks TLS (1.2 or later) to the server's TLS listener
    (``--tls-port``): the server's certificate must chain to ``ca_file`` (or
    the system's trusted CAs when None) and be valid for ``host``. A refused
    certificate raises :class:`ConnectionClosed` with code ``tls_failed``.
    ``cert_file`` and ``key_file`` present a client certificate, for servers
    started with ``--tls-client-ca``. ``ssl_context`` replaces all of that
    with a context of your own.

    ``transport="ws"`` speaks WebSocket to ``ws://host:port{path}`` (``wss://``
    with ``tls``): ``port`` is then the server's HTTP listener (``--http``),
    ``path`` the endpoint (default ``/ws``), ``origin`` an ``Origin`` header
    to send (none by default, like any client that is not a browser). The
    upgrade refused raises :class:`ConnectionClosed` with code
    ``upgrade_refused`` naming the HTTP status; a server that closes without
    ``bye`` raises ``connection_closed`` naming the close code and reason.
    Without the ``websockets`` package, :meth:`connect` raises
    :class:`OutaTimeError` with code ``websockets_missing``.

    After :meth:`close` (or a ``bye``), :meth:`connect` may be called again on
    the same object: :attr:`channels` is kept, so :meth:`recover` can ask for
    only the events missed meanwhile (section 9).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        name: Optional[str] = None,
        token: Optional[str] = None,
        timeout: float = 5.0,
        tls: bool = False,
        ca_file: Optional[str] = None,
        cert_file: Optional[str] = None,
        key_file: Optional[str] = None,
        ssl_context: Optional[ssl.SSLContext] = None,
        probe_after: float = 1.0,
        probe_timeout_floor: float = 2.0,
        tcp_liveness: Optional[tuple] = TCP_LIVENESS,
        transport: str = "tcp",
        path: str = "/ws",
        origin: Optional[str] = None,
    ) -> None:
        if transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {', '.join(map(repr, TRANSPORTS))}, got {transport!r}")
        if not path.startswith("/"):
            raise ValueError(f"path must start with '/', got {path!r}")
        self.host: str = host
        self.transport: str = transport
        """``"tcp"``: length-prefixed frames on the protocol port (TLS with ``tls``);
        ``"ws"``: WebSocket messages on the HTTP listener's ``path`` (``wss://`` with ``tls``)."""
        self.path: str = path
        """The WebSocket endpoint's path (``transport="ws"`` only)."""
        self.origin: Optional[str] = origin
        """The ``Origin`` header of the WebSocket upgrade (none by default: not a browser)."""
        self.tls: bool = tls or ssl_context is not None
        self.ca_file: Optional[str] = ca_file
        self.cert_file: Optional[str] = cert_file
        self.key_file: Optional[str] = key_file
        self.ssl_context: Optional[ssl.SSLContext] = ssl_context
        self.port: int = port
        self.name: Optional[str] = name
        self.token: Optional[str] = token
        self.timeout: float = timeout
        self.hello: Dict[str, JSON] = {}
        """The last ``hello`` result (server, protocol, session, heartbeat_ms, max_frame, role)."""
        self.channels: Dict[str, Channel] = {}
        """Trackers of the channels subscribed through this client, by name."""
        self.bye_reason: Optional[str] = None
        """The reason of the last ``bye`` received, if any."""
        self.probe_after: float = probe_after
        """Seconds without anything received before a ``ping`` probes the link (0: never)."""
        self.probe_timeout_floor: float = probe_timeout_floor
        """The least time a probe waits for anything to arrive before the link counts as dead."""
        self.tcp_liveness: Optional[tuple] = tcp_liveness
        """(keepalive idle s, interval s, probes, TCP_USER_TIMEOUT ms) for the socket; None: the kernel's."""
        self.resume_key: Optional[str] = None
        """The last ``hello`` result's ``resume_key``, sent as ``resume`` by the next :meth:`connect`."""
        self.srtt: Optional[float] = None
        """Smoothed round-trip time of ``hello`` and probe replies, in seconds (RFC 6298)."""
        self.rttvar: float = 0.0
        """The round-trip samples' mean deviation, in seconds."""
        self.last_received: float = 0.0
        """``time.monotonic()`` of the last bytes received."""
        self._probe_id: Optional[str] = None
        self._probe_sent = 0.0
        self._probes = 0
        self._link: Optional[_Link] = None
        self._pushes: Deque[Dict[str, JSON]] = collections.deque(maxlen=MAX_QUEUED_PUSHES)
        self._replies: Dict[Any, Dict[str, JSON]] = {}
        self._awaited: set = set()
        """Ids of the requests sent and not answered: a reply to any other id is dropped."""
        self.dropped_pushes = 0
        """Pushes dropped, oldest first, because ``MAX_QUEUED_PUSHES`` waited unread."""
        self.unexpected_replies = 0
        """Replies dropped because no request waited for their id."""
        self._next_id = 1
        self._last_sent = 0.0
        self.last_seq: Optional[int] = None
        """The seq of the last :meth:`command`'s event (its reply's ``seq``,
        sent for a command with an ``idempotency_key``); None otherwise."""
        self.last_repeated: bool = False
        """Whether the last :meth:`command` was answered as a repeat of one
        applied before (``repeated: true``): nothing was applied this time."""

    # ---- lifecycle -------------------------------------------------------

    def connect(self) -> Dict[str, JSON]:
        """Open the connection (TCP, TLS or WebSocket) and say ``hello``; return the hello result.

        Raises :class:`OutaTimeError` with the server's code when ``hello`` is
        refused (``unauthorized``, ``unsupported_protocol``,
        ``invalid_request``); the connection is then closed. Pushes still
        queued from an earlier connection stay readable (see :meth:`recover`).
        """
        if self._link is not None:
            raise OutaTimeError("already_connected", "this client is already connected; close() it first")
        # Pushes received on the previous connection and not read yet stay
        # queued: the trackers have applied them, so recovery resumes after
        # them (``since`` = their seq), and clearing them here would leave a
        # silent gap in what next_push() returns.
        self._replies.clear()
        self.bye_reason = None
        self.hello = {}
        for ch in self.channels.values():
            ch.subscribed = False
        self._link = self._open()
        fields: Dict[str, JSON] = {"protocol": PROTOCOL_VERSION, "client": CLIENT_NAME}
        if self.name is not None:
            fields["name"] = self.name
        if self.token is not None:
            fields["token"] = self.token
        if self.resume_key is not None:
            # The server closes the previous connection (bye replaced) before
            # answering: no watcher list shows this client twice.
            fields["resume"] = self.resume_key
        try:
            sent = time.monotonic()
            hello = self.request("hello", **fields)
            self._sample_rtt(time.monotonic() - sent)
            if hello.get("protocol") != PROTOCOL_VERSION or not isinstance(hello.get("session"), str):
                raise ProtocolError(f"the hello result is not protocol {PROTOCOL_VERSION}'s: {hello!r:.200}")
            self.hello = hello
            key = hello.get("resume_key")
            self.resume_key = key if isinstance(key, str) else None
        except OutaTimeError:
            self._abort()
            raise
        return self.hello

    def _open(self) -> "_Link":
        """Open the transport (TCP, TLS or WebSocket), without ``hello``.

        Tests use it to speak to a server that has not been greeted.
        """
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        except socket.timeout as exc:
            raise OutaTimeTimeout(f"connecting to {self.host}:{self.port} took longer than {self.timeout} s") from exc
        except OSError as exc:
            raise ConnectionClosed("connect_failed", f"cannot connect to {self.host}:{self.port}: {exc}") from exc
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.tcp_liveness is not None:
            _set_tcp_liveness(sock, *self.tcp_liveness)
        self.last_received = time.monotonic()
        self._probe_id = None
        if self.transport == "ws":
            link: _Link = _WebSocketLink.open(self, sock)
        else:
            link = _LengthPrefixedLink(self._start_tls(sock) if self.tls else sock)
        self._link = link
        return link

    def websocket_url(self) -> str:
        """The URL the ``ws`` transport connects to, e.g. ``ws://127.0.0.1:8080/ws``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'wss' if self.tls else 'ws'}://{host}:{self.port}{self.path}"

    def _make_ssl_context(self) -> ssl.SSLContext:
        if self.ssl_context is not None:
            return self.ssl_context
        try:
            ctx = ssl.create_default_context(cafile=self.ca_file)
            ctx.minimum_version = ssl.TLSVersion.TLSv1_2
            if self.cert_file is not None:
                ctx.load_cert_chain(self.cert_file, self.key_file)
        except (OSError, ssl.SSLError) as exc:
            raise ConnectionClosed("tls_failed", f"cannot set up TLS: {exc}") from exc
        return ctx

    def _start_tls(self, sock: socket.socket) -> socket.socket:
        """Wrap ``sock`` in TLS and finish the handshake (name checked against ``host``)."""
        try:
            ctx = self._make_ssl_context()
            return ctx.wrap_socket(sock, server_hostname=self.host)
        except ssl.SSLCertVerificationError as exc:
            sock.close()
            raise ConnectionClosed(
                "tls_failed", f"TLS handshake with {self.host}:{self.port} failed: "
                f"certificate verify failed: {exc.verify_message}") from exc
        except socket.timeout as exc:
            sock.close()
            raise OutaTimeTimeout(f"the TLS handshake with {self.host}:{self.port} took longer than {self.timeout} s") from exc
        except (ssl.SSLError, OSError) as exc:
            sock.close()
            raise ConnectionClosed("tls_failed", f"TLS handshake with {self.host}:{self.port} failed: {exc}") from exc

    def close(self) -> None:
        """Close the connection (idempotent). Queued pushes stay readable.

        Over WebSocket a Close frame (1000) is sent first, and the server's
        answer awaited for at most a quarter second."""
        self._close(graceful=True)

    def _abort(self) -> None:
        """Close at once, after a failure: no closing handshake to wait for."""
        self._close(graceful=False)

    def _close(self, graceful: bool) -> None:
        link, self._link = self._link, None
        if link is None:
            return
        link.close(graceful)
        for ch in self.channels.values():
            ch.subscribed = False

    @property
    def _sock(self) -> Optional[socket.socket]:
        """The connection's socket (TLS: the ``ssl.SSLSocket``), or None.

        Assigning a connected socket attaches it as a length-prefixed link
        (tests attach scripted peers so); assigning None forgets the link
        without closing it."""
        return self._link.sock if self._link is not None else None

    @_sock.setter
    def _sock(self, sock: Optional[socket.socket]) -> None:
        self._link = _LengthPrefixedLink(sock) if sock is not None else None

    @property
    def connected(self) -> bool:
        """True while the connection is open."""
        return self._link is not None

    @property
    def session(self) -> Optional[str]:
        """This connection's session id from ``hello``."""
        s = self.hello.get("session")
        return s if isinstance(s, str) else None

    def __enter__(self) -> "Client":
        if self._link is None:
            self.connect()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ---- requests --------------------------------------------------------

    def request(self, type: str, **fields: JSON) -> Dict[str, JSON]:
        """Send a request with a fresh ``id`` and wait for its reply.

        Returns the reply's ``result``; raises :class:`OutaTimeError` (with
        the server's ``code`` and ``message``) when the reply has ``ok:
        false``. Pushes received meanwhile are queued for :meth:`next_push`.
        Fields are sent as given (``None`` becomes JSON ``null``, which the
        server treats as absent, except for ``publish``'s ``data``).
        """
        reply = self._request_reply(type, time.monotonic() + self.timeout, fields)
        result = reply.get("result")
        return result if isinstance(result, dict) else {}

    def _request_reply(self, type: str, deadline: float, fields: Dict[str, JSON]) -> Dict[str, JSON]:
        """Send a request and return its whole ``ok: true`` reply (waiting
        until ``deadline``); an error reply raises :class:`OutaTimeError`."""
        rid = self._next_id
        self._next_id += 1
        body: Dict[str, JSON] = {"type": type, "id": rid}
        body.update(fields)
        self._awaited.add(rid)
        try:
            self.send(body)
            reply = self._wait_reply(rid, deadline, type)
        finally:
            self._awaited.discard(rid)
        if reply.get("ok") is True:
            return reply
        err = reply.get("error")
        if not isinstance(err, dict):
            raise ProtocolError(f"reply to '{type}' has ok != true and no error object: {reply!r}")
        raise OutaTimeError(str(err.get("code", "unknown")), str(err.get("message", "")))

    def send(self, body: Dict[str, JSON]) -> None:
        """Send one request frame as is, without waiting for anything."""
        data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        self.send_raw(data)

    def send_raw(self, body: bytes) -> None:
        """Send ``body`` (any bytes) as one frame: behind its 4-byte length
        over TCP, as one text message over WebSocket (sent as is, even when
        it is not UTF-8).

        Meant for tests and tools: the server answers a body that is not a
        JSON object with an ``error`` push ``bad_json`` and keeps going.
        """
        link = self._require_link()
        try:
            link.write_frame(body, self.timeout)
        except ConnectionClosed as exc:
            # The server may have said why before it closed (``bye
            # replaced``, ``server_shutdown``): over WebSocket the library has
            # the frames already, over TCP the kernel may. Take them in, so
            # the reason is the bye's and the push is not lost.
            self._take_arrived(link)
            self._abort()
            if self.bye_reason is not None:
                raise ConnectionClosed(self.bye_reason, f"{exc.message} (bye: {self.bye_reason})") from exc
            raise
        except OutaTimeError:
            self._abort()
            raise
        self._last_sent = time.monotonic()

    def _take_arrived(self, link: "_Link") -> None:
        """Dispatch the frames that arrived on ``link`` and wait unread, after a failure."""
        while self._link is link:
            try:
                body = link.read_frame(0.0)
                if body is None:
                    return
                self._dispatch(self._parse_frame(body))
            except OutaTimeError:
                return

    # ---- operations (section 6) ------------------------------------------

    def ping(self) -> Dict[str, JSON]:
        """``ping``: returns ``{"time": ...}``, the server's clock."""
        return self.request("ping")

    def subscribe(self, channel: str, since: Optional[int] = None, messages: bool = True) -> Dict[str, JSON]:
        """``subscribe``: start receiving the channel's pushes.

        Returns the result (``channel, kind, seq, watchers`` and ``state``, or
        with ``since`` also ``recovered`` and then ``events``) and records it
        in ``self.channels[channel]``. With ``messages=False`` the server
        sends no ``message`` pushes of the channel (section 6.3);
        :meth:`recover` keeps that choice.
        """
        fields: Dict[str, JSON] = {"channel": channel}
        if since is not None:
            fields["since"] = since
        if not messages:
            fields["messages"] = False
        result = self.request("subscribe", **fields)
        tracker = self.channels.get(channel)
        if tracker is None:
            tracker = Channel(name=channel, kind=str(result.get("kind", "")))
            self.channels[channel] = tracker
        tracker.messages = messages
        try:
            tracker.apply_subscribe_result(result)
        except (TypeError, AttributeError, ValueError, KeyError) as exc:
            self.channels.pop(channel, None)
            raise ProtocolError(f"the subscribe result for '{channel}' has the wrong shape: {exc}") from exc
        return result

    def recover(self, channel: str) -> Dict[str, JSON]:
        """Re-subscribe with ``since`` = the last seq seen on ``channel``.

        With ``recovered: true`` the missed events are appended to the
        tracker's :attr:`Channel.events`; with ``recovered: false`` the
        tracker takes the full new ``state``. For a channel never subscribed
        through this client it is a plain :meth:`subscribe`.
        """
        tracker = self.channels.get(channel)
        if tracker is None:
            return self.subscribe(channel)
        return self.subscribe(channel, since=tracker.seq, messages=tracker.messages)

    def unsubscribe(self, channel: str) -> Dict[str, JSON]:
        """``unsubscribe``: stop the channel's pushes (its tracker is dropped)."""
        result = self.request("unsubscribe", channel=channel)
        self.channels.pop(channel, None)
        return result

    def get(self, channel: str) -> Dict[str, JSON]:
        """``get``: the channel's ``channel, kind, seq, state`` once."""
        return self.request("get", channel=channel)

    def list(self, kind: Optional[str] = None) -> Dict[str, JSON]:
        """``list``: ``{"channels": [{channel, kind, seq, watchers(count)}]}``."""
        if kind is None:
            return self.request("list")
        return self.request("list", kind=kind)

    def history(self, channel: str, after: int = 0, limit: int = 100) -> Dict[str, JSON]:
        """``history``: ``{channel, seq, events}`` with seq > ``after``, oldest first."""
        return self.request("history", channel=channel, after=after, limit=limit)

    def publish(self, channel: str, data: JSON) -> Dict[str, JSON]:
        """``publish``: send ``data`` (any JSON, ``None`` too) to the channel's
        subscribers; returns ``{"delivered": n}``."""
        return self.request("publish", channel=channel, data=data)

    def command(self, channel: str, action: str, *, idempotency_key: Optional[str] = None,
                retry: bool = False, **args: JSON) -> Dict[str, JSON]:
        """``command``: run ``action`` on ``channel`` with ``args``; returns the
        action's result (section 14).

        ``idempotency_key`` (1–64 characters of ``A–Z a–z 0–9 . _ - :``)
        makes the command safe to send again: the server applies a command
        with a given key at most once and answers a repeat with the first
        outcome (section 6.9). After the call, :attr:`last_seq` is the seq
        of the command's event (None when it made none) and
        :attr:`last_repeated` says whether the reply answered a repeat.

        With ``retry=True`` the command gets a random key (unless one is
        given) and, when the connection fails before the reply (closed,
        reset, no reply in time, ``server_busy``, ``unavailable``), the
        client reconnects (resubscribing the channels it was subscribed to,
        with :meth:`recover`) and sends it again with the same key, until
        the client's ``timeout`` has passed since the call. When no answer
        came by then, :class:`OutcomeUnknown` is raised: the command may or
        may not have been applied; call again with its ``idempotency_key``
        to settle it. A refusal (any other error reply) is raised as usual:
        nothing was applied. A timers list's ``start`` and ``stop`` act on
        this connection's viewing, which ends with the connection: the
        server does not remember their key, so a retry views again.
        """
        fields: Dict[str, JSON] = {"channel": channel, "action": action, "args": args}
        if retry and idempotency_key is None:
            idempotency_key = str(uuid.uuid4())
        if idempotency_key is not None:
            fields["idempotency_key"] = idempotency_key
        if not retry:
            return self._command_reply(self._request_reply("command", time.monotonic() + self.timeout, fields))
        assert idempotency_key is not None
        deadline = time.monotonic() + self.timeout
        subscribed = [name for name, ch in self.channels.items() if ch.subscribed]
        problem: Optional[OutaTimeError] = None
        while True:
            if self._link is not None:
                try:
                    return self._command_reply(self._request_reply("command", deadline, fields))
                except (ConnectionClosed, OutaTimeTimeout) as exc:
                    if isinstance(exc, ConnectionClosed) and not exc.retryable:
                        # ``replaced``: a newer connection holds this session,
                        # and coming back would replace it in turn.
                        self._abort()
                        raise OutcomeUnknown(idempotency_key, exc) from exc
                    problem = exc
                except ProtocolError:
                    raise
                except OutaTimeError as exc:
                    if exc.code not in ("server_busy", "unavailable"):
                        raise
                    problem = exc
                self._abort()
            if time.monotonic() >= deadline:
                raise OutcomeUnknown(idempotency_key, problem)
            problem = self._reconnect_before(deadline, subscribed, idempotency_key) or problem

    def _command_reply(self, reply: Dict[str, JSON]) -> Dict[str, JSON]:
        seq = reply.get("seq")
        self.last_seq = seq if isinstance(seq, int) else None
        self.last_repeated = reply.get("repeated") is True
        result = reply.get("result")
        return result if isinstance(result, dict) else {}

    def _reconnect_before(self, deadline: float, subscribed: "list[str]", key: str) -> Optional[OutaTimeError]:
        """One attempt to reconnect (and resubscribe) within ``deadline``;
        returns what failed, or None. Waits a quarter second after a failure.
        A refusal (a token no longer accepted, a channel out of scope) ends
        the retries: :class:`OutcomeUnknown`, since the command may have
        been applied before the link failed."""
        saved = self.timeout
        self.timeout = max(0.05, min(saved, deadline - time.monotonic()))
        try:
            self.connect()
            for name in subscribed:
                self.recover(name)
            return None
        except (ConnectionClosed, OutaTimeTimeout) as exc:
            self._abort()
            time.sleep(max(0.0, min(0.25, deadline - time.monotonic())))
            return exc
        except OutaTimeError as exc:
            self._abort()
            raise OutcomeUnknown(key, exc) from exc
        finally:
            self.timeout = saved

    def stats(self) -> Dict[str, JSON]:
        """``stats``: the server's counters."""
        return self.request("stats")

    # ---- pushes ------------------------------------------------------------

    def next_push(self, timeout: Optional[float] = None) -> Dict[str, JSON]:
        """Return the next push (``event``, ``tick``, ``message``, ``presence``,
        ``error``, ``bye``, or a type from a later revision).

        Waits at most ``timeout`` seconds (default: the client's ``timeout``)
        and raises :class:`OutaTimeTimeout` when nothing came. A ``bye`` is
        returned like any push (the connection is already closed then); once
        the connection is closed and the queue is empty,
        :class:`ConnectionClosed` is raised.
        """
        if self._pushes:
            return self._pushes.popleft()
        wait = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + max(0.0, wait)
        while not self._pushes:
            if self._link is None:
                raise ConnectionClosed(self.bye_reason or "connection_closed", "the connection is closed")
            frame = self._read_frame(deadline)
            if frame is None:
                raise OutaTimeTimeout(f"no push within {wait} s")
            self._dispatch(frame)
        return self._pushes.popleft()

    def pending_pushes(self) -> int:
        """How many pushes are queued (without reading the socket)."""
        return len(self._pushes)

    def pushes(self, timeout: float) -> Iterator[Dict[str, JSON]]:
        """Yield pushes until none arrives for ``timeout`` seconds or the
        connection closes (the ``bye`` push is yielded last)."""
        while True:
            try:
                yield self.next_push(timeout)
            except (OutaTimeTimeout, ConnectionClosed):
                return

    # ---- internals ---------------------------------------------------------

    def _require_link(self) -> "_Link":
        if self._link is None:
            raise ConnectionClosed(self.bye_reason or "connection_closed", "the connection is closed; call connect()")
        return self._link

    def _wait_reply(self, rid: RequestId, deadline: float, what: str) -> Dict[str, JSON]:
        while True:
            reply = self._replies.pop(rid, None)
            if reply is not None:
                return reply
            if self._link is None:
                raise ConnectionClosed(
                    self.bye_reason or "connection_closed",
                    f"the connection closed before the reply to '{what}'"
                    + (f" (bye: {self.bye_reason})" if self.bye_reason else ""),
                )
            frame = self._read_frame(deadline)
            if frame is None:
                raise OutaTimeTimeout(f"no reply to '{what}' (id {rid}) within {self.timeout} s")
            self._dispatch(frame)

    def _dispatch(self, frame: Dict[str, JSON]) -> None:
        kind = frame.get("type")
        if kind == "reply":
            key = _id_key(frame.get("id"))
            if key is not None and key == self._probe_id:
                self._probe_id = None
                self._sample_rtt(time.monotonic() - self._probe_sent)
                return
            if isinstance(key, (int, str)) and key in self._awaited:
                self._replies[key] = frame
            else:
                self.unexpected_replies += 1
            return
        channel = frame.get("channel")
        tracker = self.channels.get(channel) if isinstance(channel, str) else None
        if tracker is not None:
            try:
                if kind == "event" and isinstance(frame.get("seq"), int):
                    tracker.apply_event(frame)
                elif kind == "tick":
                    tracker.last_tick = frame.get("data")
                elif kind == "presence":
                    tracker.apply_presence(frame)
                elif kind == "dropped":
                    tracker.messages_dropped += int(frame.get("messages", 0))
            except (TypeError, AttributeError, ValueError, KeyError) as exc:
                self._abort()
                raise ProtocolError(f"the server sent a {kind} push of the wrong shape: {exc}") from exc
        if len(self._pushes) == MAX_QUEUED_PUSHES:
            self.dropped_pushes += 1  # the deque drops the oldest
        self._pushes.append(frame)
        if kind == "bye":
            reason = frame.get("reason")
            self.bye_reason = reason if isinstance(reason, str) else "unknown"
            self.close()

    def probe_timeout(self) -> float:
        """How long a liveness probe waits for anything to arrive:
        srtt + 4 × rttvar + 0.2 s, at least ``probe_timeout_floor``."""
        if self.srtt is None:
            return self.probe_timeout_floor
        return max(self.probe_timeout_floor, self.srtt + 4 * self.rttvar + 0.2)

    def _sample_rtt(self, sample: float) -> None:
        if self.srtt is None:
            self.srtt, self.rttvar = sample, sample / 2
        else:
            self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - sample)
            self.srtt = 0.875 * self.srtt + 0.125 * sample

    def _check_liveness(self, now: float) -> float:
        """Probe a silent link, or give it up; return how long the next
        wait may last before this must run again."""
        if not self.hello or self.probe_after <= 0:
            return 3600.0
        if self._probe_id is not None:
            if self.last_received >= self._probe_sent:
                self._probe_id = None  # something came back since: alive
            else:
                waited = now - self._probe_sent
                limit = self.probe_timeout()
                if waited >= limit:
                    self._abort()
                    raise ConnectionClosed(
                        "unresponsive",
                        f"nothing arrived from {self.host}:{self.port} within {limit:.1f} s of a ping "
                        f"(after {now - self.last_received:.1f} s of silence): the path or the server is gone",
                    )
                return limit - waited
        silent = now - self.last_received
        if silent < self.probe_after:
            return self.probe_after - silent
        self._probes += 1
        self._probe_id = f"live-{self._probes}"
        self._probe_sent = now
        self.send({"type": "ping", "id": self._probe_id})
        return self.probe_timeout()

    def _heartbeat_interval(self) -> float:
        hb = self.hello.get("heartbeat_ms")
        if isinstance(hb, (int, float)) and hb > 0:
            return hb / 1000.0 / 2.0
        return 5.0

    def _read_frame(self, deadline: float) -> Optional[Dict[str, JSON]]:
        """Read one frame; None when ``deadline`` passes first.

        Sends a heartbeat ping while waiting, when one is due, and probes a
        silent link (:meth:`_check_liveness`). Once part of a frame has
        arrived, the wait lasts as long as bytes keep coming: the client's
        ``timeout`` bounds the silence, not the whole frame (a large frame on
        a slow link takes longer than any fixed deadline).
        """
        while True:
            link = self._require_link()
            now = time.monotonic()
            partial = link.partial()
            limit = deadline if partial is None else max(deadline, link.last_received + self.timeout)
            if now >= limit:
                body = self._link_read(link, 0.0)  # only what has arrived already
                if body is not None:
                    return self._parse_frame(body)
                if partial is None:
                    return None
                self._abort()
                raise OutaTimeTimeout(f"the rest of a frame stopped arriving: no byte for {self.timeout} s ({partial})")
            beat = self._heartbeat_interval()
            if self.hello and now - self._last_sent >= beat:
                self.send({"type": "ping"})  # no id: a pure heartbeat, no reply
            live = self._check_liveness(now)
            link = self._require_link()
            wait = min(limit - now, live, max(0.01, beat - (time.monotonic() - self._last_sent)))
            body = self._link_read(link, max(0.001, wait))
            if body is not None:
                return self._parse_frame(body)

    def _link_read(self, link: "_Link", wait: float) -> Optional[Union[bytes, str]]:
        try:
            body = link.read_frame(wait)
        except OutaTimeError:
            self._abort()
            raise
        self.last_received = max(self.last_received, link.last_received)
        return body

    def _parse_frame(self, body: Union[bytes, str]) -> Dict[str, JSON]:
        try:
            text = body if isinstance(body, str) else body.decode("utf-8")
            frame = json.loads(text)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            self._abort()
            raise ProtocolError(f"the server sent a frame that is not UTF-8 JSON: {exc}") from exc
        if not isinstance(frame, dict) or not isinstance(frame.get("type"), str):
            self._abort()
            raise ProtocolError(f"the server sent a frame that is not an object with a string 'type': {body[:200]!r}")
        return frame


def _set_tcp_liveness(sock: socket.socket, idle: int, interval: int, count: int, user_timeout_ms: int) -> None:
    """TCP keepalive and ``TCP_USER_TIMEOUT`` where the platform has them
    (the constants are Linux's; elsewhere only ``SO_KEEPALIVE``)."""
    try:
        if idle > 0:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            for name, value in (("TCP_KEEPIDLE", idle), ("TCP_KEEPINTVL", interval), ("TCP_KEEPCNT", count)):
                option = getattr(socket, name, None)
                if option is not None and value > 0:
                    sock.setsockopt(socket.IPPROTO_TCP, option, value)
        option = getattr(socket, "TCP_USER_TIMEOUT", None)
        if option is not None and user_timeout_ms > 0:
            sock.setsockopt(socket.IPPROTO_TCP, option, user_timeout_ms)
    except OSError:
        pass  # an option the system refuses: the probes above still work


def _id_key(value: Any) -> Any:
    """Normalise a reply id for lookup (an int id may come back as 5.0)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
