import OutaTimeProtocol
import UV

/// The HTTP listener (`--http`): one small HTTP/1.1 layer on the server's
/// loop and UV streams, with routes. Today `/healthz` and `/readyz`;
/// `/metrics` (and later a browser board) are routes on the same layer.
extension Server {
    /// Binds and listens; returns the bound address.
    func startHTTP(_ endpoint: HTTPEndpoint) throws -> SocketAddress? {
        let listener = TCPListener(loop: loop)
        httpListener = listener
        try listening(on: endpoint.host, endpoint.port, flag: "--http") {
            try listener.bind(SocketAddress(host: endpoint.host, port: endpoint.port))
            // A connection that sends nothing reaches the loop only after this
            // long (then the hello timeout closes it): an idle crowd waits in
            // the kernel instead of costing an accept and a close each.
            listener.deferAccept(seconds: Self.httpDeferAcceptSeconds)
            // At most 128 accepts per loop iteration, as on the protocol
            // listeners: a crowd of scrapers cannot hold the loop.
            try listener.listen(backlog: Self.httpBacklog, acceptsPerIteration: Self.acceptsPerIteration) {
                [unowned self, unowned listener] error in
                self.acceptHTTP(error, from: listener)
            }
        }
        return listener.localAddress
    }

    /// Seconds the kernel holds an HTTP connection that has sent nothing
    /// before handing it over (Linux `TCP_DEFER_ACCEPT`).
    static let httpDeferAcceptSeconds: Int32 = 5

    /// The HTTP listener's kernel queue: connections over the cap wait there.
    static let httpBacklog: Int32 = 511

    private func acceptHTTP(_ error: UVError?, from listener: TCPListener) {
        assertOnLoopThread()
        if let error {
            logger.warning("http accept failed", metadata: ["error": "\(error)"])
            return
        }
        guard phase.acceptsHTTP else {
            counters.httpRefused += 1
            (try? listener.accept())?.close()
            return
        }
        // At the cap, the connection is left in the kernel's queue: libuv
        // stops watching a listener whose callback does not accept, until
        // `accept()` is called (``httpConnectionClosed(_:)``). Closing it
        // instead cost the loop an accept and a close (the FIN) for each
        // of a crowd (docs/BENCHMARKS.md), as HAProxy's `maxconn` avoids too.
        // Connections from a balancer still sending their PROXY header
        // hold a place too.
        guard httpConnections.count + httpProxyHeaderWaits < config.maxHTTPConnections else {
            if !httpAcceptPaused {
                httpAcceptPaused = true
                counters.httpAcceptPauses += 1
            }
            return
        }
        guard let tcp = try? listener.accept() else { return }
        tcp.setNoDelay()
        if let proxy = tcp.peerAddress?.host, config.proxyFrom.anyContains(proxy) {
            // A trusted balancer (`--proxy-from`): its PROXY header names
            // the client, whose address then counts in the per-address cap.
            awaitProxyHeader(on: tcp, listener: .http, proxy: proxy)
            return
        }
        openHTTP(tcp, host: tcp.peerAddress?.host, early: nil)
    }

    /// A PROXY header wait of the HTTP listener ended without a header:
    /// its place is free again.
    func httpProxyHeaderWaitEnded() {
        httpProxyHeaderWaits -= 1
        guard httpAcceptPaused, let listener = httpListener else { return }
        httpAcceptPaused = false
        acceptHTTP(nil, from: listener)
    }

    /// Serves an accepted HTTP connection from the client at `host` (after
    /// its PROXY header when it came through a trusted balancer; `early`:
    /// the bytes that followed the header in the same read).
    func openHTTP(_ tcp: TCPStream, host: String?, early: UnsafeRawBufferPointer?) {
        // `--http-tls` (https://, wss://): the TLS stream of the TLS
        // listener, its handshakes through the same per-iteration gate.
        guard let stream = socketStream(tcp, tls: config.httpTLS) else { return }
        nextHTTPSerial += 1
        let connection = HTTPConnection(serial: nextHTTPSerial, stream: stream, peerHost: host, now: time.now)
        httpConnections[connection.serial] = connection
        stream.onWriteError = { [unowned self, unowned connection] _ in self.dropHTTP(connection) }
        if let host {
            let held = httpAddresses[host, default: 0]
            httpAddresses[host] = held + 1
            // Over its address's cap: a short 503 and a close, unread. Not
            // left in the kernel's queue as at the global cap, where it
            // would wait in front of other addresses' connections.
            guard held < config.maxHTTPConnectionsPerAddress else {
                return refuseHTTP(connection, host: host)
            }
        }
        do {
            try stream.startReading(onData: { [unowned self, unowned connection] bytes in
                self.receivedHTTP(bytes, on: connection)
            }, onEnd: { [unowned self, unowned connection] _ in
                self.dropHTTP(connection)
            })
        } catch {
            dropHTTP(connection)
            return
        }
        if let early, early.count > 0 {
            switch stream {
            case .tcp: receivedHTTP(early, on: connection)
            case .tls(let tls): tls.receivedEarly(early)
            }
        }
    }

    /// Answers `503` to a connection whose address holds its cap, and
    /// closes it: one small write, no read, no state beyond its close.
    private func refuseHTTP(_ connection: HTTPConnection, host: String) {
        counters.httpRefusedPerAddress += 1
        logger.debug("http connection refused", metadata: ["peer": "\(host)", "limit": "\(config.maxHTTPConnectionsPerAddress)"])
        // Over TLS a 503 would cost the handshake the cap is there to spare.
        if connection.stream.tls != nil { return dropHTTP(connection) }
        let response = HTTPResponse(status: .serviceUnavailable, body: "too many HTTP connections from \(host): at most "
            + "\(config.maxHTTPConnectionsPerAddress) at once (--http-max-connections-per-address); close one first\n")
        connection.send(response.bytes(keepAlive: false, headOnly: false))
        closeHTTP(connection)
    }

    private func receivedHTTP(_ bytes: UnsafeRawBufferPointer, on connection: HTTPConnection) {
        connection.receive(bytes, now: time.now)
        answerHTTP(connection)
    }

    /// Answers the connection's complete heads in order. Pipelined heads
    /// are answered only while the answers are read: past
    /// ``httpOutputLimit`` bytes unsent it stops reading and goes on when
    /// they are written (the kernel buffers the rest, then the client
    /// waits), so a client that asks and never reads costs a bounded
    /// amount of memory. And at most ``httpHeadsPerTurn`` heads are
    /// answered per loop iteration, the rest in the next ones, so that a
    /// pipelined crowd takes its turn beside the protocol's connections
    /// instead of before them (docs/BENCHMARKS.md).
    func answerHTTP(_ connection: HTTPConnection) {
        var answered = 0
        while !connection.isClosing {
            if connection.stream.bufferedByteCount >= Self.httpOutputLimit {
                connection.stream.stopReading()
                connection.stream.onDrained = { [unowned self, unowned connection] in
                    connection.stream.onDrained = nil
                    waitForTurn(connection)  // a write completed: a turn, within the budget
                }
                return
            }
            if answered == Self.httpHeadsPerTurn {
                connection.stream.stopReading()
                waitForTurn(connection)
                return
            }
            switch connection.nextHead() {
            case .needMore:
                try? connection.stream.resumeReading()
                return
            case .head(let head, _):
                counters.httpRequests += 1
                answered += 1
                if head.path == Self.webSocketPath { return answerWebSocket(head, on: connection) }
                let response = route(head)
                let keepAlive = head.keepsAlive && phase.acceptsHTTP && response.keepsAlive
                connection.send(response.bytes(keepAlive: keepAlive, headOnly: head.method == .head))
                connection.answered(at: time.now)
                if !keepAlive { return closeHTTP(connection) }
            case .refused(let refusal):
                counters.httpRefusedHeads += 1
                logger.debug("http request refused", metadata: ["status": "\(refusal.status.rawValue)", "reason": "\(refusal.reason)"])
                var response = HTTPResponse(status: refusal.status, body: refusal.reason + "\n")
                if refusal.status == .methodNotAllowed { response.extraFields.append(("Allow", "GET, HEAD")) }
                connection.send(response.bytes(keepAlive: false, headOnly: false))
                return closeHTTP(connection)
            }
        }
    }

    /// Unsent answer bytes past which a connection's further heads wait.
    static let httpOutputLimit = 64 * 1024

    /// Heads one connection has answered per loop iteration.
    static let httpHeadsPerTurn = 4

    /// Answers `connection`'s next heads in the next loop iteration.
    private func waitForTurn(_ connection: HTTPConnection) {
        guard !connection.waitsForTurn else { return }
        connection.waitsForTurn = true
        httpTurns.append(connection)
        nextTurn.request()
    }

    /// One turn for each connection that waited for it, in order, until
    /// the read budget's time (``ServerConfig/readBudgetMicroseconds``) is
    /// spent: the others keep their place for the next iteration, and
    /// connections that wait again go after them.
    func takeHTTPTurns() {
        let started = Loop.hrtime
        let limit = UInt64(config.readBudgetMicroseconds) * 1_000
        for taken in 0..<httpTurns.count {  // those waiting now: one that waits again is behind them
            if limit > 0, taken > 0, Loop.hrtime &- started >= limit { break }
            let connection = httpTurns.removeFirst()
            connection.waitsForTurn = false
            answerHTTP(connection)
        }
        if !httpTurns.isEmpty { nextTurn.request() }
    }

    /// The response to a head: the routes.
    func route(_ head: HTTPRequestHead) -> HTTPResponse {
        switch head.path {
        case "/healthz":
            // The loop turns (it is answering), the store's link is up and
            // its writer is not failing.
            if let trouble = storeTrouble {
                return HTTPResponse(status: .serviceUnavailable, body: "unhealthy: \(trouble)\n")
            }
            return HTTPResponse(status: .ok, body: "ok\n")
        case "/metrics":
            return HTTPResponse(status: .ok, body: metricsText(),
                                contentType: "text/plain; version=0.0.4; charset=utf-8")
        case "/readyz":
            guard case .running = phase else {
                return HTTPResponse(status: .serviceUnavailable, body: "not ready: the server is \(phase.name)\n")
            }
            // A node that cannot store cannot serve commands: a balancer should send clients elsewhere.
            if let outage = store.status.outage {
                return HTTPResponse(status: .serviceUnavailable, body: "not ready: \(outage): the store cannot write\n")
            }
            if let cluster {
                guard let ownership = cluster.ownership, ownership.ready, !ownership.fenced else {
                    return HTTPResponse(status: .serviceUnavailable,
                                        body: "not ready: cluster membership \(cluster.ownership?.fenced == true ? "fenced (its lease lapsed)" : "not caught up yet")\n")
                }
            }
            return HTTPResponse(status: .ok, body: "ready\n")
        case let path where path == "/" || path.hasPrefix("/web/"): return webResponse(head)
        default:
            return HTTPResponse(status: .notFound, body: "no route \(head.path.prefix(100)); routes: /, /web/*, /ws, /metrics, /healthz, /readyz\n")
        }
    }

    /// A connection whose head does not arrive whole within the head
    /// timeout (``ServerConfig/httpHeadTimeoutMs``) is closed, `408` if
    /// part of it came; so is one idle between heads for the hello timeout,
    /// and one whose answers were not read in that time (no `408`: it does
    /// not read); a closing connection whose last answer is not read within
    /// the linger time is closed at once.
    func sweepHTTP(now: UInt64) {
        let timeout = UInt64(config.helloTimeoutMs)
        let headTimeout = UInt64(config.httpHeadTimeoutMs)
        for connection in Array(httpConnections.values) {
            if let deadline = connection.closeDeadline {
                if now >= deadline { dropHTTP(connection) }
                continue
            }
            // Unread answers are the client's wait, not a late head's.
            let headLate = connection.stream.isDrained
                && connection.headStartedAt.map { now - $0 >= headTimeout } ?? false
            guard headLate || now - connection.waitingSince >= timeout else { continue }
            counters.httpTimeouts += 1
            if !connection.stream.isDrained {
                dropHTTP(connection)
                continue
            }
            if connection.hasPartialHead {
                let response = HTTPResponse(status: .requestTimeout, body: "the request head did not arrive in time\n")
                connection.send(response.bytes(keepAlive: false, headOnly: false))
            }
            closeHTTP(connection)
        }
    }

    func closeHTTP(_ connection: HTTPConnection) {
        connection.closeAfterWriting(deadline: time.now + UInt64(config.lingerMs)) { [unowned self] in
            self.httpConnectionClosed(connection)
        }
    }

    private func dropHTTP(_ connection: HTTPConnection) {
        connection.closeNow { [unowned self] in self.httpConnectionClosed(connection) }
    }

    private func httpConnectionClosed(_ connection: HTTPConnection) {
        releaseHTTP(connection)
    }

    /// The connection closed or left the HTTP side (`GET /ws` upgraded it):
    /// its slot and its address's count are free, and the connection
    /// waiting at the cap, if any, is taken.
    func releaseHTTP(_ connection: HTTPConnection) {
        httpConnections[connection.serial] = nil
        if let host = connection.peerHost, let held = httpAddresses[host] {
            httpAddresses[host] = held > 1 ? held - 1 : nil
        }
        connection.stream.onDrained = nil
        guard httpAcceptPaused, let listener = httpListener else { return }
        httpAcceptPaused = false
        acceptHTTP(nil, from: listener)
    }

    /// The server stops: the listener and every HTTP connection close.
    func closeHTTP() {
        httpAcceptPaused = false
        httpListener?.close()
        httpListener = nil
        for connection in Array(httpConnections.values) { dropHTTP(connection) }
    }
}

extension Server.Phase {
    /// HTTP is served while running and draining (`/readyz` then says 503).
    /// One word for `/readyz`.
    var name: String {
        switch self {
        case .starting: "starting"
        case .running: "running"
        case .draining: "draining"
        case .stopped: "stopped"
        }
    }

    var acceptsHTTP: Bool {
        switch self {
        case .running, .draining: true
        default: false
        }
    }
}
