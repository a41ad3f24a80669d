import OutaTimeProtocol
import UV

/// A synchronous client for one-shot commands and scripts: each call runs a
/// private loop on the calling thread until its reply arrives or the
/// timeout passes.
///
/// It does not reconnect, and between calls nothing runs: the server closes
/// a connection left silent for 2 × `heartbeat_ms` (then calls fail with
/// ``ClientError/closed(_:)``). For long-lived use, run an
/// ``OutaTimeConnection`` on a loop instead. Not thread-safe: use it from
/// one thread.
///
/// ```swift
/// let client = try BlockingClient(options: ClientOptions(port: 1985, name: "script"))
/// defer { client.close() }
/// let car = try client.send(.get("delorean/main"))
/// ```
public final class BlockingClient {
    /// The underlying connection (for its ``OutaTimeConnection/hello`` or callbacks).
    public let connection: OutaTimeConnection
    /// The most any one call waits, in milliseconds.
    public var timeoutMs: UInt64
    private let loop: Loop
    private let watchdog: UV.Timer
    private var isClosed = false

    /// Connects and says `hello`, waiting at most `timeoutMs`.
    ///
    /// - Throws: ``ClientError/closed(_:)`` with the reason when the
    ///   connection or `hello` fails; ``ClientError/timedOut``.
    public init(options: ClientOptions, timeoutMs: UInt64 = 10_000) throws(ClientError) {
        var options = options
        options.reconnect = false
        options.connectTimeoutMs = min(options.connectTimeoutMs, timeoutMs)
        options.requestTimeoutMs = nil  // the watchdog bounds every call
        do {
            loop = try Loop()
        } catch {
            throw .closed(.ioError(error))
        }
        watchdog = UV.Timer(loop: loop)
        connection = OutaTimeConnection(loop: loop, options: options)
        self.timeoutMs = timeoutMs
        connection.connect()
        let finished = run(until: {
            switch connection.state {
            case .ready, .closed: true
            default: false
            }
        })
        guard finished, connection.isReady else {
            let reason = connection.lastDisconnect
            close()
            throw finished ? .closed(reason) : .timedOut
        }
    }

    deinit { close() }

    /// The session's `hello` result.
    public var hello: HelloResult? { connection.hello }

    /// Sends a request and waits for its `result`.
    ///
    /// - Throws: ``ClientError/server(_:)`` for an error reply,
    ///   ``ClientError/timedOut``, ``ClientError/disconnected`` or
    ///   ``ClientError/closed(_:)``.
    public func request(_ type: String, fields: [String: JSONValue] = [:]) throws(ClientError) -> JSONValue {
        var outcome: Result<JSONValue, ClientError>?
        connection.request(type, fields: fields) { outcome = $0 }
        guard run(until: { outcome != nil }), let outcome else { throw .timedOut }
        return try outcome.get()
    }

    /// Sends a typed request (``ClientRequest``) and waits for its decoded result.
    public func send<Result: Decodable>(_ request: ClientRequest<Result>) throws(ClientError) -> Result {
        try self.request(request.type, fields: request.fields).decode(Result.self)
    }

    /// Runs the loop until `condition` holds (checked after every loop
    /// iteration) or `timeoutMs` passes; true when the condition held.
    /// Pushes arrive through the connection's callbacks meanwhile.
    @discardableResult
    public func run(timeoutMs: UInt64? = nil, until condition: () -> Bool) -> Bool {
        if condition() { return true }
        guard !isClosed else { return false }
        var expired = false
        watchdog.start(timeoutMs: timeoutMs ?? self.timeoutMs) { expired = true }
        defer { watchdog.stop() }
        while !expired {
            let alive = loop.runOnce()
            if condition() { return true }
            if !alive { break }
        }
        return false
    }

    /// Closes the connection, waits for every handle to close and closes the
    /// loop. Idempotent; also done on deinit.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        connection.close()
        watchdog.close()
        // Close callbacks (and any lookup still on the thread pool) finish here.
        loop.run()
        try? loop.close()
    }
}
