import CNats
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A connection to a NATS server or cluster, made through libnats.
///
/// Thread-safe: libnats' connection object may be used from any thread, and
/// every call here may block (up to its timeout), so never call one on an
/// event loop. Handlers and event closures run on libnats' threads.
public final class NATSConnection: @unchecked Sendable {
    // @unchecked: `pointer` is a libnats natsConnection, safe to use from
    // any thread; `closed` is behind a Mutex.
    let pointer: OpaquePointer
    /// The options the connection was made with.
    public let options: NATSConnectionOptions
    private let closed = Mutex(false)

    /// Connects to one of `options.servers`; throws when none answers within
    /// the connect timeout.
    public init(_ options: NATSConnectionOptions) throws(NATSError) {
        guard !options.servers.isEmpty else { throw .invalidArgument("no NATS server URL given") }
        var opts: OpaquePointer?
        try check(natsOptions_Create(&opts), "create NATS options")
        defer { natsOptions_Destroy(opts) }
        let events = ConnectionEvents(
            disconnected: options.onDisconnected, reconnected: options.onReconnected, closed: options.onClosed)
        let closure = Trampolines.retain(events)
        var connection: OpaquePointer?
        var result = Self.configure(opts!, options, closure: closure)
        if case .success = result {
            let status = natsConnection_Connect(&connection, opts)
            if status != NATS_OK {
                result = .failure(NATSError.from(status, operation: "connect to \(options.servers.joined(separator: ","))"))
            }
        }
        if case .failure(let error) = result {
            Trampolines.releaseEvents(closure)
            throw error
        }
        pointer = connection!
        self.options = options
    }

    private static func configure(_ opts: OpaquePointer, _ options: NATSConnectionOptions, closure: UnsafeMutableRawPointer) -> Result<Void, NATSError> {
        do throws(NATSError) {
            try withCStrings(options.servers) { (urls: UnsafeMutablePointer<UnsafePointer<CChar>?>) throws(NATSError) in
                try check(natsOptions_SetServers(opts, urls, Int32(options.servers.count)),
                          "set servers \(options.servers.joined(separator: ","))")
            }
            if let name = options.name { try check(natsOptions_SetName(opts, name), "set connection name '\(name)'") }
            try check(natsOptions_SetSendAsap(opts, options.sendAsap), "set SendAsap")
            try check(natsOptions_UseGlobalMessageDelivery(opts, options.globalMessageDelivery), "set global message delivery")
            try check(natsOptions_SetMaxReconnect(opts, Int32(options.maxReconnect)), "set max reconnect \(options.maxReconnect)")
            try check(natsOptions_SetReconnectWait(opts, options.reconnectWait.milliseconds), "set reconnect wait")
            try check(natsOptions_SetTimeout(opts, options.connectTimeout.milliseconds), "set connect timeout")
            try check(natsOptions_SetPingInterval(opts, options.pingInterval.milliseconds), "set ping interval")
            try check(natsOptions_SetMaxPingsOut(opts, Int32(options.maxPingsOut)), "set max pings out \(options.maxPingsOut)")
            try check(natsOptions_SetFailRequestsOnDisconnect(opts, options.failRequestsOnDisconnect), "set fail requests on disconnect")
            try check(natsOptions_SetDisconnectedCB(opts, Trampolines.onDisconnected, closure), "set disconnected callback")
            try check(natsOptions_SetReconnectedCB(opts, Trampolines.onReconnected, closure), "set reconnected callback")
            try check(natsOptions_SetClosedCB(opts, Trampolines.onClosed, closure), "set closed callback")
            return .success(())
        } catch {
            return .failure(error)
        }
    }

    /// Closes the connection (pending messages are flushed first by libnats);
    /// idempotent. Later calls fail with ``NATSError/connectionClosed(operation:)``.
    public func close() {
        let first = closed.withLock { closed in
            defer { closed = true }
            return !closed
        }
        if first { natsConnection_Close(pointer) }
    }

    /// True after ``close()`` or when libnats gave up reconnecting.
    public var isClosed: Bool { closed.withLock { $0 } || natsConnection_IsClosed(pointer) }

    /// The URL of the server currently connected to, or nil while disconnected.
    public var connectedURL: String? {
        var buffer = [CChar](repeating: 0, count: 512)
        guard natsConnection_GetConnectedUrl(pointer, &buffer, buffer.count) == NATS_OK, buffer[0] != 0 else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Flushes published messages and waits for the server's PONG.
    public func flush(timeout: Duration = .seconds(2)) throws(NATSError) {
        try check(natsConnection_FlushTimeout(pointer, timeout.milliseconds), "flush")
    }

    /// The version of the server currently connected to. libnats 3.4 does not
    /// expose the server's INFO, so this reads the INFO line the server sends
    /// on a fresh plain TCP connection to ``connectedURL``.
    public func serverVersion(timeout: Duration = .seconds(2)) throws(NATSError) -> NATSServerVersion {
        guard let url = connectedURL else { throw .connectionClosed(operation: "read the server version") }
        return try ServerInfoProbe.version(url: url, timeout: timeout)
    }

    deinit {
        // Destroy closes the connection if needed; the events box is
        // released by the closed callback, which runs after this returns.
        natsConnection_Destroy(pointer)
    }
}

/// Calls `body` with a C array of the strings (valid only inside `body`).
func withCStrings<R>(_ strings: [String], _ body: (UnsafeMutablePointer<UnsafePointer<CChar>?>) throws(NATSError) -> R) throws(NATSError) -> R {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    var pointers = copies.map { UnsafePointer<CChar>($0) }
    return try pointers.withUnsafeMutableBufferPointer { (buffer) throws(NATSError) -> R in try body(buffer.baseAddress!) }
}
