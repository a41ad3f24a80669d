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
        try listener.listen { [unowned self, unowned listener] error in self.acceptHTTP(error, from: listener) }
        return listener.localAddress
    }

    private func acceptHTTP(_ error: UVError?, from listener: TCPListener) {
        assertOnLoopThread()
        if let error {
            logger.warning("http accept failed", metadata: ["error": "\(error)"])
            return
        }
        guard let tcp = try? listener.accept() else { return }
        guard phase.acceptsHTTP, httpConnections.count < config.maxHTTPConnections else {
            counters.httpRefused += 1
            tcp.close()
            return
        }
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
            var byKind: [String: Int] = [:]
            for kind in ChannelKind.allCases { byKind[kind.rawValue] = 0 }
            for channel in channels.values where channel.pipeline.isDurable {
                byKind[channel.name.kind.rawValue, default: 0] += 1
            }
            return HTTPResponse(status: .ok, body: metrics.render(statsResult(), channelsByKind: byKind, writer: writer.stats),
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
        connection.closeAfterWriting { [unowned self] in self.httpConnections[connection.serial] = nil }
    }

    private func dropHTTP(_ connection: HTTPConnection) {
        connection.closeNow { [unowned self] in self.httpConnections[connection.serial] = nil }
    }

    /// The server stops: the listener and every HTTP connection close.
    func closeHTTP() {
        httpListener?.close()
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
