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
        try listener.bind(SocketAddress(host: endpoint.host, port: endpoint.port))
        // A connection that sends nothing reaches the loop only after this
        // long (then the hello timeout closes it): an idle crowd waits in
        // the kernel instead of costing an accept and a close each.
        listener.deferAccept(seconds: Self.httpDeferAcceptSeconds)
        try listener.listen(backlog: Self.httpBacklog) { [unowned self, unowned listener] error in
            self.acceptHTTP(error, from: listener)
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
        guard httpConnections.count < config.maxHTTPConnections else {
            if !httpAcceptPaused {
                httpAcceptPaused = true
                counters.httpAcceptPauses += 1
            }
            return
        }
        guard let tcp = try? listener.accept() else { return }
        tcp.setNoDelay()
        nextHTTPSerial += 1
        let connection = HTTPConnection(serial: nextHTTPSerial, stream: tcp, now: loop.now)
        httpConnections[connection.serial] = connection
        tcp.onWriteError = { [unowned self, unowned connection] _ in self.dropHTTP(connection) }
        do {
            try tcp.startReading(onData: { [unowned self, unowned connection] bytes in
                self.receivedHTTP(bytes, on: connection)
            }, onEnd: { [unowned self, unowned connection] _ in
                self.dropHTTP(connection)
            })
        } catch {
            dropHTTP(connection)
        }
    }

    private func receivedHTTP(_ bytes: UnsafeRawBufferPointer, on connection: HTTPConnection) {
        let (heads, refusal) = connection.receive(bytes)
        for head in heads {
            counters.httpRequests += 1
            let response = route(head)
            let keepAlive = head.keepsAlive && refusal == nil && phase.acceptsHTTP
            connection.send(response.bytes(keepAlive: keepAlive, headOnly: head.method == .head))
            connection.answered(at: loop.now)
            if !keepAlive {
                closeHTTP(connection)
                return
            }
        }
        if let refusal {
            counters.httpRefusedHeads += 1
            logger.debug("http request refused", metadata: ["status": "\(refusal.status.rawValue)", "reason": "\(refusal.reason)"])
            var response = HTTPResponse(status: refusal.status, body: refusal.reason + "\n")
            if refusal.status == .methodNotAllowed { response.extraFields.append(("Allow", "GET, HEAD")) }
            connection.send(response.bytes(keepAlive: false, headOnly: false))
            closeHTTP(connection)
        }
    }

    /// The response to a head: the routes.
    func route(_ head: HTTPRequestHead) -> HTTPResponse {
        switch head.path {
        case "/healthz":
            // The loop turns (it is answering) and the store writer is not failing.
            if let failure = storeFailure {
                return HTTPResponse(status: .serviceUnavailable, body: "unhealthy: the store's last write failed: \(failure)\n")
            }
            return HTTPResponse(status: .ok, body: "ok\n")
        case "/metrics":
            return HTTPResponse(status: .ok, body: metricsText(),
                                contentType: "text/plain; version=0.0.4; charset=utf-8")
        case "/readyz":
            if case .running = phase { return HTTPResponse(status: .ok, body: "ready\n") }
            return HTTPResponse(status: .serviceUnavailable, body: "not ready: the server is \(phase.name)\n")
        default:
            return HTTPResponse(status: .notFound, body: "no route \(head.path.prefix(100)); routes: /metrics, /healthz, /readyz\n")
        }
    }

    /// A connection without a complete head for the hello timeout is
    /// closed (`408` if part of a head came).
    func sweepHTTP(now: UInt64) {
        let timeout = UInt64(config.helloTimeoutMs)
        for connection in Array(httpConnections.values) where !connection.isClosing && now - connection.waitingSince >= timeout {
            if connection.hasPartialHead {
                let response = HTTPResponse(status: .requestTimeout, body: "the request head did not arrive in time\n")
                connection.send(response.bytes(keepAlive: false, headOnly: false))
            }
            counters.httpTimeouts += 1
            closeHTTP(connection)
        }
    }

    private func closeHTTP(_ connection: HTTPConnection) {
        connection.closeAfterWriting { [unowned self] in self.httpConnectionClosed(connection) }
    }

    private func dropHTTP(_ connection: HTTPConnection) {
        connection.closeNow { [unowned self] in self.httpConnectionClosed(connection) }
    }

    /// A slot is free: the connection waiting at the cap, if any, is taken.
    private func httpConnectionClosed(_ connection: HTTPConnection) {
        httpConnections[connection.serial] = nil
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
