import OutaTimeProtocol
import UV

/// A connection limit a new connection can hit (its name is the key in
/// `stats`' `connections_refused`).
enum ConnectionLimit: String {
    /// ``ServerConfig/maxConnections``.
    case total = "max_connections"
    /// ``ServerConfig/maxConnectionsPerAddress``.
    case perAddress = "max_connections_per_address"
}

extension Server {
    /// The limit a new connection from `host` would exceed, if any. Every
    /// held connection counts, closing ones too: each holds a descriptor.
    func connectionLimitReached(host: String?) -> ConnectionLimit? {
        if connections.count >= config.maxConnections { return .total }
        if let host, addresses.connections(of: host) >= config.maxConnectionsPerAddress { return .perAddress }
        return nil
    }

    /// Refuses a just-accepted connection: an `error` and a `bye`
    /// `server_busy` handed to the kernel in one write attempt, then FIN;
    /// what the peer sends is read and dropped until its EOF or the linger
    /// time, then the descriptor is closed. Closing at once would turn
    /// unread input (a `hello` sent straight away) into a reset, and a
    /// reset makes the peer's kernel drop the two frames before they are
    /// read. At most ``maxLingeringRefusals`` wait at once; past that (a
    /// flood) a refusal is closed at once. A TLS connection is closed
    /// without them: no `bye` can be read before a handshake, and a
    /// handshake is exactly the cost to avoid.
    ///
    /// O(1) and cheap, so that a flood is refused as fast as it arrives
    /// (issue 28): the two frames are encoded once and shared
    /// (``RefusalFrames``), and go out in one `writev`; no `TCP_NODELAY`
    /// (one write is never held back by Nagle).
    func refuse(_ tcp: TCPStream, limit: ConnectionLimit, host: String?, tls: Bool) {
        counters.connectionsRefused[limit.rawValue, default: 0] += 1
        logRefusal(limit, host: host)
        if !tls {
            do {
                let frames = try refusalFrames.bytes(for: limit, host: host, config: config, encoder: encoder)
                tcp.enqueue(frames)
                tcp.flush()  // a fresh socket's buffer takes these few bytes at once
                counters.framesOut += 2
                counters.bytesOut += frames.bytes.count
            } catch {
                logger.error("encoding failed", metadata: ["error": "\(error)"])
            }
            if lingeringRefusals.count < Self.maxLingeringRefusals, linger(tcp) { return }
        }
        tcp.close()
    }

    /// Refusals that may wait for their peer's EOF at once: each holds a
    /// descriptor for up to the linger time (``ServerConfig/lingerMs``).
    static let maxLingeringRefusals = 64

    /// Connections each listener hands over per loop iteration
    /// (``TCPListener``): a flood is accepted and refused in slices of this
    /// many, with the other clients' reads, timers and commits in between.
    /// A refusal costs some microseconds: a slice holds the loop for a
    /// millisecond or two.
    static let acceptsPerIteration = 128

    /// Shuts down the write side of a refused connection and drops what it
    /// reads until its EOF; the sweep closes it at the linger deadline.
    /// False when it cannot start reading (close it at once).
    private func linger(_ tcp: TCPStream) -> Bool {
        let key = ObjectIdentifier(tcp)
        do {
            try tcp.startReading(onData: { _ in }, onEnd: { [unowned self] _ in self.endRefusal(key) })
        } catch {
            return false
        }
        tcp.onWriteError = { [unowned self] _ in self.endRefusal(key) }
        lingeringRefusals[key] = (tcp, time.now + UInt64(config.lingerMs))
        tcp.shutdown { _ in }
        return true
    }

    /// Closes a lingering refusal (its peer's EOF, an error, or its deadline).
    func endRefusal(_ key: ObjectIdentifier) {
        lingeringRefusals.removeValue(forKey: key)?.stream.close()
    }

    /// Closes the lingering refusals whose deadline has passed.
    func sweepRefusals(now: UInt64) {
        for (key, refusal) in lingeringRefusals where now >= refusal.deadline { endRefusal(key) }
    }

    /// Refusals are logged at debug level each, and as a warning at most
    /// once per 10 s with the totals, so a flood cannot flood the log.
    private func logRefusal(_ limit: ConnectionLimit, host: String?) {
        logger.debug("connection refused", metadata: ["limit": "\(limit.rawValue)", "peer": "\(host ?? "?")"])
        let now = time.now
        guard now >= nextRefusalWarning else { return }
        nextRefusalWarning = now + 10_000
        logger.warning("refusing connections at a connection limit",
                       metadata: ["limit": "\(limit.rawValue)", "connections": "\(connections.count)",
                                  "max_connections": "\(config.maxConnections)",
                                  "max_connections_per_address": "\(config.maxConnectionsPerAddress)",
                                  "refused": "\(counters.connectionsRefused)"])
    }

    /// A failed accept (descriptors exhausted: libuv's spare one then
    /// closes what waits) is logged at most once per 10 s, naming how many
    /// were not: under a flood it fails once per loop iteration.
    func logAcceptFailure(_ error: UVError) {
        guard let suppressed = acceptFailureLog.admit(now: time.now) else { return }
        logger.warning("accept failed", metadata: ["error": "\(error)", "not_logged_before": "\(suppressed)",
                                                   "accept_errors": "\(counters.acceptErrors)"])
    }
}
