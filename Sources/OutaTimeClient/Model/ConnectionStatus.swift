import OutaTimeProtocol
import UV

// How a connection is doing: its state, why it last dropped, its counters.

/// Why the connection (or an attempt to make it) ended.
public enum DisconnectReason: Sendable, Equatable, CustomStringConvertible {
    /// The server said `bye` with this reason (``ByeReason/serverShutdown``,
    /// ``ByeReason/idleTimeout``, …). A `bye` whose reason this client
    /// does not know ends the link as a ``protocolViolation(_:)``.
    case bye(ByeReason)
    /// The server closed the stream without a `bye`.
    case endOfStream
    /// Reading or writing failed (reset, broken pipe, …).
    case ioError(UVError)
    /// The server broke the framing or sent something that is not a frame
    /// of JSON; the stream cannot be trusted any more.
    case protocolViolation(String)
    /// Nothing arrived from the server within the liveness probe's timeout
    /// (``ClientOptions/probeAfterMs``), or no frame for ``ClientOptions/unresponsiveAfterMs``.
    case unresponsive
    /// Connecting and `hello` took longer than ``ClientOptions/connectTimeoutMs``.
    case connectTimeout
    /// The TCP connection could not be made (refused, unreachable, …).
    case connectFailed(UVError)
    /// The host name could not be resolved.
    case resolveFailed(UVError)
    /// The server refused `hello` (`unauthorized`, `unsupported_protocol`,
    /// `invalid_request`); never retried.
    case helloRefused(ServerError)
    /// TLS failed: the server's certificate was refused (expired, another
    /// name, unknown CA: never retried), the server refused ours, or the
    /// handshake broke off.
    case tlsFailed(String)

    /// Whether reconnecting can help: a refused `hello` or a bye for a
    /// refusal would only be refused again.
    public var isRetryable: Bool {
        switch self {
        case .helloRefused: false
        case .tlsFailed(let why): !why.contains("certificate verify failed") && !why.hasPrefix("cannot ")
        // `replaced`: a newer connection resumed this session; coming back
        // would replace it in turn.
        case .bye(let reason): reason != .unauthorized && reason != .unsupportedProtocol && reason != .replaced
        default: true
        }
    }

    /// A short phrase for status lines and logs.
    public var description: String {
        switch self {
        case .bye(let reason): "server said bye (\(reason.rawValue))"
        case .endOfStream: "server closed the connection"
        case .ioError(let error): "connection error \(error)"
        case .protocolViolation(let why): "protocol violation: \(why)"
        case .unresponsive: "server stopped answering"
        case .connectTimeout: "connect timed out"
        case .connectFailed(let error): "connect failed: \(error)"
        case .resolveFailed(let error): "cannot resolve host: \(error)"
        case .helloRefused(let error): "hello refused: \(error)"
        case .tlsFailed(let why): why
        }
    }
}

extension DisconnectReason {
    /// A stable name of the case, for machine-readable output: `bye:<reason>`,
    /// `end_of_stream`, `io_error`, `protocol_violation`, `unresponsive`,
    /// `connect_timeout`, `connect_failed`, `resolve_failed`, `hello_refused`, `tls_failed`.
    public var code: String {
        switch self {
        case .bye(let reason): "bye:\(reason.rawValue)"
        case .endOfStream: "end_of_stream"
        case .ioError: "io_error"
        case .protocolViolation: "protocol_violation"
        case .unresponsive: "unresponsive"
        case .connectTimeout: "connect_timeout"
        case .connectFailed: "connect_failed"
        case .resolveFailed: "resolve_failed"
        case .helloRefused: "hello_refused"
        case .tlsFailed: "tls_failed"
        }
    }

    /// Why the connection dropped, in an operator's words, for a status
    /// line: the `bye` reason explained, or what happened to the link.
    /// `silenceMs`, the time since the last frame when it dropped, makes a
    /// lost link say how long it was silent ("link lost: nothing for 3.1 s").
    public func explanation(silenceMs: UInt64? = nil) -> String {
        switch self {
        case .bye(let reason):
            let why = switch reason {
            case .serverShutdown: "the server is shutting down"
            case .idleTimeout: "the server heard nothing from us for too long"
            case .helloTimeout: "hello took too long"
            case .slowConsumer: "the server closed it: we read too slowly"
            case .protocolError: "the server saw broken framing"
            case .unsupportedProtocol: "the server does not speak protocol 1"
            case .unauthorized: "not authorized"
            case .serverBusy: "the server is full"
            case .replaced: "a newer connection of this client took the session over"
            }
            return "\(why) (bye \(reason.rawValue))"
        case .unresponsive:
            guard let silenceMs else { return "link lost: the server stopped answering" }
            return "link lost: nothing for " + Self.seconds(silenceMs)
        case .ioError(let error): return "link lost: \(error)"
        default: return description
        }
    }

    /// `3.1 s`: milliseconds as seconds with one decimal.
    public static func seconds(_ ms: UInt64) -> String {
        "\(ms / 1000).\((ms % 1000) / 100) s"
    }
}

/// Where the connection stands, as reported to
/// ``OutaTimeConnection/onStateChange``.
public enum ConnectionState: Sendable, Equatable, CustomStringConvertible {
    /// Created, ``OutaTimeConnection/connect()`` not yet called.
    case idle
    /// Resolving, connecting or waiting for the `hello` reply.
    case connecting
    /// `hello` succeeded; requests flow. Subscriptions are being restored
    /// (see ``OutaTimeConnection/onSync``).
    case ready
    /// The connection dropped; attempt `attempt` starts in `delayMs`.
    case reconnecting(attempt: Int, delayMs: UInt64)
    /// Closed for good: by ``OutaTimeConnection/close()`` (reason nil) or
    /// after a failure that reconnecting cannot fix.
    case closed(DisconnectReason?)

    /// `connecting`, `ready`, `reconnecting (attempt 3 in 400 ms)`, `closed`.
    public var description: String {
        switch self {
        case .idle: "idle"
        case .connecting: "connecting"
        case .ready: "ready"
        case .reconnecting(let attempt, let delay): "reconnecting (attempt \(attempt) in \(delay) ms)"
        case .closed(let reason?): "closed: \(reason)"
        case .closed(nil): "closed"
        }
    }
}

/// Counters of one ``OutaTimeConnection``, for status lines, logs and tests
/// (a test proves "recovered, not reloaded" with ``recoveries`` and
/// ``reloads``).
public struct ClientStats: Sendable, Equatable {
    /// Successful `hello`s: the first connection and every reconnection.
    public var connects = 0
    /// Connections (or attempts) that ended other than by ``OutaTimeConnection/close()``.
    public var disconnects = 0
    /// Reconnect attempts scheduled with backoff.
    public var reconnectAttempts = 0
    /// Requests written to the socket, heartbeats and subscriptions included.
    public var requestsSent = 0
    /// Heartbeat `ping`s sent.
    public var pingsSent = 0
    /// `subscribe` results that carried a full state for a new mirror.
    public var snapshots = 0
    /// `subscribe` results with `recovered: true` (only the missed events).
    public var recoveries = 0
    /// Events applied from recoveries.
    public var recoveredEvents = 0
    /// `subscribe` results with `since` that replaced the state instead.
    public var reloads = 0
    /// `event` pushes received.
    public var eventsReceived = 0
    /// Events applied to a mirror (live and recovered).
    public var eventsApplied = 0
    /// Events ignored because the mirror already had them.
    public var staleEvents = 0
    /// Seq gaps detected in live events (each triggers a `since` resubscribe).
    public var gaps = 0
    /// The smoothed round-trip time of `hello` and `ping` replies (RFC
    /// 6298), in ms; nil before the first reply.
    public var smoothedRTTMs: Double?
    /// The mean deviation of the round-trip samples, in ms.
    public var rttVarianceMs: Double?

    /// All zero.
    public init() {}
}
