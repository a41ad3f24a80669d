import Foundation
import Logging
import OutaTimeProtocol
import UV

/// What a ``Connection`` needs of the server, and no more: the request
/// router, the shared encoder, the counters, the logger, the limits, the
/// loop's time and the list of connections with output to flush. One per
/// server, shared by every connection (a connection holds it strongly:
/// 8 bytes, the word `unowned let server` took before).
final class ConnectionContext {
    /// Where requests go, and who is told when a connection ends: the
    /// server, from the end of its `init` (``attach(_:)``; no connection
    /// exists before). It owns this context and every connection, so it
    /// outlives both (`unowned(unsafe)`: no reference count on the request
    /// path).
    private(set) unowned(unsafe) var router: any ConnectionRouter = Unrouted.shared
    /// Encodes every reply and push (loop thread only).
    let encoder: ReusableMessageEncoder
    /// The counters `stats` and `/metrics` report (``Server/counters`` is this).
    @exclusivity(unchecked) var counters = ServerCounters()  // see Server.subscriptions
    let logger: Logger
    let limits: ConnectionLimits
    /// The server's time (milliseconds, ``ServerClock``): activity,
    /// request-rate windows and the linger deadline are read from it, so
    /// a test that moves the server's time moves the connections' too.
    let time: ServerClock
    /// False while the server drains or has stopped: no connection starts
    /// reading again.
    var takesInput = false
    /// Connections with output queued since the last flush, each once
    /// (``Connection/isDirty``); the server flushes them once per loop
    /// iteration.
    @exclusivity(unchecked) var dirty: [Connection] = []  // see Server.subscriptions

    /// The loop's thread: connections are entered on it only.
    private let loopThread = pthread_self()

    /// A context made before its server (the server's stored properties
    /// come first); the server attaches itself at the end of its `init`.
    /// The server owns the context: its own hot paths (counters, encoder)
    /// read a stored reference, not a lazily made one (a lazy property's
    /// getter retained and released it on every counter update: +3 % of
    /// the instructions of a publish at 10 subscribers, callgrind).
    init(encoder: ReusableMessageEncoder, logger: Logger, limits: ConnectionLimits, time: ServerClock) {
        self.encoder = encoder
        self.logger = logger
        self.limits = limits
        self.time = time
    }

    /// Makes `router` the one connections use (once, before any connection exists).
    func attach(_ router: any ConnectionRouter) {
        self.router = router
    }

    /// Entry points from libuv run on the loop thread only: nothing here is locked.
    @inline(__always)
    func assertOnLoopThread() {
        assert(pthread_equal(loopThread, pthread_self()) != 0, "connection entered off the loop thread")
    }

    /// Queues `connection` for the next flush (once).
    @inline(__always)
    func markDirty(_ connection: Connection) {
        guard !connection.isDirty else { return }
        connection.isDirty = true
        dirty.append(connection)
    }

    /// Encodes `message`; nil (logged) if it cannot be encoded.
    func encoded<Message: Encodable>(_ message: Message, for connection: Connection) -> Frame? {
        do {
            return try encoder.frame(message)
        } catch {
            logger.error("encoding failed", metadata: ["conn.id": "\(connection.id)", "error": "\(error)"])
            return nil
        }
    }
}

/// The limits a connection applies to itself (from ``ServerConfig``).
struct ConnectionLimits {
    /// Output queued beyond this closes the connection as a slow consumer.
    var outputBytes: Int
    /// Output beyond this holds back ticks and drops messages.
    var tickBacklogBytes: Int
    /// Requests per window; 0: no limit.
    var requestsPerWindow: Int
    var requestRateWindowMs: Int
    /// How long a closing connection waits for its peer's close.
    var lingerMs: Int
    /// The largest frame (or WebSocket message) taken.
    var maxFrame: Int
    /// How long a connection may go without `hello`.
    var helloTimeoutMs: UInt64
    /// How long a ready connection may go without a frame (its heartbeat).
    var idleTimeoutMs: UInt64

    init(_ config: ServerConfig) {
        outputBytes = config.outputLimitBytes
        tickBacklogBytes = config.tickBacklogBytes
        requestsPerWindow = config.maxRequestsPerSecond
        requestRateWindowMs = config.requestRateWindowMs
        lingerMs = config.lingerMs
        maxFrame = config.maxFrame
        helloTimeoutMs = UInt64(config.helloTimeoutMs)
        idleTimeoutMs = UInt64(config.idleTimeoutMs)
    }
}

/// What a connection asks of the server (the server is the one router).
protocol ConnectionRouter: AnyObject {
    /// Runs one parsed request on `connection` (``Server/dispatch(_:on:)``).
    func dispatch(_ request: Request, on connection: Connection) -> Handled
    /// `connection` stops taking requests (closing, or closed abruptly):
    /// its subscriptions go and their watchers are told.
    func connectionEnding(_ connection: Connection)
    /// `connection`'s socket is closed: the server forgets it.
    func connectionClosed(_ connection: Connection)
    /// `connection` is over its request rate: run it again at its next
    /// window (``Connection/rateWindowBegan()``).
    func wakeAtNextWindow(_ connection: Connection, at time: UInt64)
    /// Logs a connection that began like a PROXY header from an address
    /// `--proxy-from` does not trust; true if it did (``Server/logUntrustedProxyHeader(_:firstByte:)``).
    func logUntrustedProxyHeader(_ connection: Connection, firstByte: UInt8?) -> Bool
}

/// The router of a context no server has attached yet: it never sees a
/// request (a server attaches itself before it accepts anything), and
/// refuses one if it did.
private final class Unrouted: ConnectionRouter, Sendable {
    static let shared = Unrouted()

    func dispatch(_ request: Request, on connection: Connection) -> Handled {
        connection.close(bye: .serverShutdown)
        return .replied
    }

    func connectionEnding(_ connection: Connection) {}
    func connectionClosed(_ connection: Connection) {}
    func wakeAtNextWindow(_ connection: Connection, at time: UInt64) {}
    func logUntrustedProxyHeader(_ connection: Connection, firstByte: UInt8?) -> Bool { false }
}
