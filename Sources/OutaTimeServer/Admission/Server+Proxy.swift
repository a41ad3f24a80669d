import OutaTimeProtocol
import UV

/// A connection from a trusted balancer (`--proxy-from`) until its PROXY
/// header is whole: the bytes so far (at most one header's worth) and the
/// loop time by which it must have come (``ServerConfig/helloTimeoutMs``).
final class ProxyHeaderWait {
    /// The listener a connection came to: the header comes first on each.
    enum Listener {
        case plain, tls
        /// `--http` (TLS after the header with `--http-tls`).
        case http
    }

    let tcp: TCPStream
    let listener: Listener
    /// True on the TLS listener (the handshake follows the header).
    var tls: Bool { listener == .tls }
    /// The balancer's address.
    let proxy: String
    /// Loop time of the accept: the hello timeout runs from it.
    let acceptedAt: UInt64
    let deadline: UInt64
    var received: [UInt8] = []

    init(tcp: TCPStream, listener: Listener, proxy: String, acceptedAt: UInt64, timeoutMs: Int) {
        self.tcp = tcp
        self.listener = listener
        self.proxy = proxy
        self.acceptedAt = acceptedAt
        self.deadline = acceptedAt + UInt64(timeoutMs)
    }
}

/// The PROXY protocol (`--proxy-from`): a trusted balancer's connection
/// begins with a header naming the client, in clear before TLS; the
/// session is made once it is read, with the client's address.
extension Server {
    /// Reads the PROXY header of a connection from the trusted `proxy`.
    func awaitProxyHeader(on tcp: TCPStream, tls: Bool, proxy: String) {
        awaitProxyHeader(on: tcp, listener: tls ? .tls : .plain, proxy: proxy)
    }

    /// Reads the PROXY header of a connection to `listener` from the trusted `proxy`.
    func awaitProxyHeader(on tcp: TCPStream, listener: ProxyHeaderWait.Listener, proxy: String) {
        let wait = ProxyHeaderWait(tcp: tcp, listener: listener, proxy: proxy, acceptedAt: time.now,
                                   timeoutMs: config.helloTimeoutMs)
        let key = ObjectIdentifier(tcp)
        do {
            try tcp.startReading(onData: { [unowned self] bytes in self.proxyHeaderBytes(bytes, key: key) },
                                 onEnd: { [unowned self] _ in
                                     if let wait = self.proxyHeaderWaits.removeValue(forKey: key) { self.endProxyHeaderWait(wait) }
                                 })
        } catch {
            tcp.close()
            return
        }
        proxyHeaderWaits[key] = wait
        if listener == .http { httpProxyHeaderWaits += 1 }
    }

    /// A wait ended without a header (refused, timed out, closed, shutdown).
    private func endProxyHeaderWait(_ wait: ProxyHeaderWait) {
        wait.tcp.close()
        if wait.listener == .http { httpProxyHeaderWaitEnded() }
    }

    private func proxyHeaderBytes(_ bytes: UnsafeRawBufferPointer, key: ObjectIdentifier) {
        guard let wait = proxyHeaderWaits[key] else { return }
        let before = wait.received.count
        // At most one header's worth is kept: the rest of the read is the
        // session's (TLS records or frames), passed on without a copy.
        let room = ProxyHeader.maxVersion2Length - before
        wait.received.append(contentsOf: bytes.prefix(room))
        switch ProxyHeader.parse(wait.received) {
        case .incomplete:
            return
        case .invalid(let reason):
            proxyHeaderWaits[key] = nil
            logger.warning("PROXY header refused, connection closed", metadata: [
                "proxy": "\(wait.proxy)", "listener": "\(wait.listener)", "error": "\(reason)"])
            counters.proxyHeadersRefused += 1
            endProxyHeaderWait(wait)
        case .header(let header, let length):
            proxyHeaderWaits[key] = nil
            let host = switch header {
            case .client(let host, _): host
            case .connectionAddress: wait.proxy
            }
            let rest = UnsafeRawBufferPointer(rebasing: bytes[(length - before)...])
            switch wait.listener {
            case .plain, .tls:
                open(wait.tcp, tls: wait.tls, host: host, proxy: wait.proxy, early: rest, acceptedAt: wait.acceptedAt)
            case .http:
                httpProxyHeaderWaits -= 1
                openHTTP(wait.tcp, host: host, early: rest)
            }
        }
    }

    /// Closes the waits whose header did not come by their deadline.
    func sweepProxyHeaderWaits(now: UInt64) {
        for (key, wait) in proxyHeaderWaits where now >= wait.deadline {
            proxyHeaderWaits[key] = nil
            logger.warning("no PROXY header within the hello timeout, connection closed", metadata: [
                "proxy": "\(wait.proxy)", "received_bytes": "\(wait.received.count)",
                "hello_timeout_ms": "\(config.helloTimeoutMs)"])
            counters.proxyHeadersRefused += 1
            endProxyHeaderWait(wait)
        }
    }

    /// Closes every wait (shutdown).
    func closeProxyHeaderWaits() {
        let waits = proxyHeaderWaits.values
        proxyHeaderWaits = [:]
        for wait in waits { endProxyHeaderWait(wait) }
    }

    /// Logs a connection from an address `--proxy-from` does not trust
    /// that began like a PROXY header (`firstByte`), before it is closed.
    func logUntrustedProxyHeader(_ session: Connection, firstByte: UInt8?) -> Bool {
        guard let firstByte, ProxyHeader.mayBegin(with: firstByte) else { return false }
        counters.proxyHeadersRefused += 1
        logger.warning("PROXY header from an address --proxy-from does not trust, connection closed", metadata: [
            "conn.id": "\(session.id)", "peer": "\(session.peerHost ?? "?")",
            "proxy_from": "\(config.proxyFrom.isEmpty ? "-" : config.proxyFrom.map(\.description).joined(separator: ","))"])
        return true
    }
}
