import OutaTimeProtocol
import UV

/// Where and how an ``OutaTimeConnection`` connects. Every field may be
/// changed between attempts through ``OutaTimeConnection/options``: a new
/// `host` or `port` is used from the next reconnect on.
public struct ClientOptions: Sendable, Equatable {
    /// The server's host: a numeric address, `localhost`, or a name that is
    /// resolved off the loop thread (``UV/Resolver``).
    public var host: String
    /// The server's TCP port.
    public var port: Int
    /// The operator's display name sent in `hello` (at most 100 characters and 400 bytes of UTF-8).
    public var name: String?
    /// The client program sent in `hello`, e.g. `outatime-term/0.1`.
    public var client: String?
    /// The access token, for a server started with a tokens file.
    public var token: String?
    /// Milliseconds between heartbeat `ping`s. nil: half the server's
    /// `heartbeat_ms` from `hello`; 0: never ping, neither heartbeats nor
    /// liveness probes, and no unresponsiveness checks (the server will then
    /// close an idle connection with `idle_timeout`).
    public var heartbeatIntervalMs: UInt64?
    /// Silence from the server after which it is taken for dead and the
    /// connection is dropped (and reconnected). nil: 2 × `heartbeat_ms`.
    /// The heartbeat `ping`s make a live server answer well within that.
    /// Only complete frames count here; the liveness probes below usually
    /// find a dead path much sooner.
    public var unresponsiveAfterMs: UInt64?
    /// Liveness: after this long without anything from the server, a
    /// `ping` probes the link; 0: no probes (only the heartbeat and
    /// ``unresponsiveAfterMs``). A busy server (ticks, events) is never
    /// probed: whatever arrives answers the question.
    public var probeAfterMs: UInt64
    /// The least time a probe waits for anything to arrive before the link
    /// is taken for dead (``DisconnectReason/unresponsive``, then a
    /// reconnect). The wait is smoothed RTT + 4 × RTT variance +
    /// ``probeMarginMs`` (measured on `hello` and `ping` replies, as TCP
    /// sets its retransmission timeout), but never less than this.
    /// Satellite links (RTT 0.6–1 s, bursts of loss): 5,000.
    public var probeTimeoutFloorMs: UInt64
    /// Added to the RTT-derived probe timeout: room for the server's own
    /// delays (a busy loop iteration, a reply queued behind pushes).
    public var probeMarginMs: UInt64
    /// TCP keepalive and `TCP_USER_TIMEOUT` on the socket: the kernel
    /// fails the connection when the server stops acknowledging what was
    /// sent (by default after 8 s) or stops answering keepalive probes.
    /// ``UV/TCPLiveness/kernelDefaults``: leave the kernel's (hours).
    public var tcpLiveness: TCPLiveness
    /// Whether to reconnect (with ``backoff``) after the connection drops or
    /// a connection attempt fails. Refusals by the server (`unauthorized`,
    /// `unsupported_protocol`, any failed `hello`) close for good either way.
    public var reconnect: Bool
    /// The delays between reconnect attempts.
    public var backoff: BackoffPolicy
    /// The most one attempt may take from the first connect call to the
    /// `hello` reply, in milliseconds.
    public var connectTimeoutMs: UInt64
    /// How long a request waits for its reply before it fails with
    /// ``ClientError/timedOut``, counted from the call; nil waits forever
    /// (a dropped connection still fails it).
    public var requestTimeoutMs: UInt64?
    /// TLS to the server's TLS listener, or nil for plain TCP. The server's
    /// certificate must be valid for ``host``.
    public var tls: TLSOptions?

    /// Keepalive after 4 s of silence, then a probe a second, 4 probes;
    /// unacknowledged data fails the socket after 8 s: the server's defaults.
    public static let defaultTCPLiveness = TCPLiveness(keepaliveIdleSeconds: 4, keepaliveIntervalSeconds: 1,
                                                       keepaliveCount: 4, userTimeoutMs: 8_000)

    /// The client program name used when none is given.
    public static let defaultClient = "outatime-client/0.1"

    /// Creates options; everything but the address has a default.
    public init(
        host: String = "127.0.0.1",
        port: Int = 1985,
        name: String? = nil,
        client: String? = ClientOptions.defaultClient,
        token: String? = nil,
        heartbeatIntervalMs: UInt64? = nil,
        unresponsiveAfterMs: UInt64? = nil,
        probeAfterMs: UInt64 = 1_000,
        probeTimeoutFloorMs: UInt64 = 2_000,
        probeMarginMs: UInt64 = 200,
        tcpLiveness: TCPLiveness = ClientOptions.defaultTCPLiveness,
        reconnect: Bool = true,
        backoff: BackoffPolicy = BackoffPolicy(),
        connectTimeoutMs: UInt64 = 5_000,
        requestTimeoutMs: UInt64? = 30_000,
        tls: TLSOptions? = nil
    ) {
        self.host = host
        self.port = port
        self.name = name
        self.client = client
        self.token = token
        self.heartbeatIntervalMs = heartbeatIntervalMs
        self.unresponsiveAfterMs = unresponsiveAfterMs
        self.probeAfterMs = probeAfterMs
        self.probeTimeoutFloorMs = probeTimeoutFloorMs
        self.probeMarginMs = probeMarginMs
        self.tcpLiveness = tcpLiveness
        self.reconnect = reconnect
        self.backoff = backoff
        self.connectTimeoutMs = connectTimeoutMs
        self.requestTimeoutMs = requestTimeoutMs
        self.tls = tls
    }

    /// The `hello` request's fields.
    var helloFields: [String: JSONValue] {
        var fields: [String: JSONValue] = ["protocol": .int(1)]
        if let name { fields["name"] = .string(name) }
        if let client { fields["client"] = .string(client) }
        if let token { fields["token"] = .string(token) }
        return fields
    }
}

/// How a client speaks TLS: which CAs it trusts, and its own certificate
/// for servers that require one (`--tls-client-ca`).
public struct TLSOptions: Sendable, Equatable {
    /// PEM file of the CAs the server's certificate must chain to; nil: the
    /// system's trusted CAs.
    public var caFile: String?
    /// PEM file of a client certificate (mutual TLS).
    public var certificateFile: String?
    /// PEM file of the client certificate's key (default: `certificateFile`).
    public var privateKeyFile: String?

    /// Creates TLS options.
    public init(caFile: String? = nil, certificateFile: String? = nil, privateKeyFile: String? = nil) {
        self.caFile = caFile
        self.certificateFile = certificateFile
        self.privateKeyFile = privateKeyFile
    }
}
