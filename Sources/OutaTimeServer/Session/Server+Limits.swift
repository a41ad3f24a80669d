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
        if sessions.count >= config.maxConnections { return .total }
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
    /// flood) a refusal is closed at once, O(1) as before. A TLS connection
    /// is closed without them: no `bye` can be read before a handshake, and
    /// a handshake is exactly the cost to avoid.
    func refuse(_ tcp: TCPStream, limit: ConnectionLimit, host: String?, tls: Bool) {
        counters.connectionsRefused[limit.rawValue, default: 0] += 1
        logRefusal(limit, host: host)
        if !tls {
            let message = switch limit {
            case .total:
                "the server holds its maximum of \(config.maxConnections) connections (--max-connections); retry later"
            case .perAddress:
                "address \(host ?? "?") holds its maximum of \(config.maxConnectionsPerAddress) connections "
                    + "(--max-connections-per-address); close one or retry later"
            }
            do {
                tcp.setNoDelay()
                let error = try encoder.frame(ErrorPush(error: ProtocolError(.serverBusy, message)))
                let bye = try encoder.frame(ByePush(reason: .serverBusy))
                tcp.enqueue(error)
                tcp.enqueue(bye)
                tcp.flush()  // a fresh socket's buffer takes these few bytes at once
                counters.framesOut += 2
                counters.bytesOut += error.count + bye.count
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
        lingeringRefusals[key] = (tcp, loop.now + UInt64(config.lingerMs))
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
        let now = loop.now
        guard now >= nextRefusalWarning else { return }
        nextRefusalWarning = now + 10_000
        logger.warning("refusing connections at a connection limit",
                       metadata: ["limit": "\(limit.rawValue)", "connections": "\(sessions.count)",
                                  "max_connections": "\(config.maxConnections)",
                                  "max_connections_per_address": "\(config.maxConnectionsPerAddress)",
                                  "refused": "\(counters.connectionsRefused)"])
    }
}
