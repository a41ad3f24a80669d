import OutaTimeProtocol
import UV

/// `GET /ws` on the HTTP listener (protocol "WebSocket transport"): the
/// rules a request must meet (its URL, the listener's exposure, `Host`,
/// `Origin`, the RFC 6455 handshake), then `101 Switching Protocols`, and
/// the connection leaves the HTTP side (its slot and its address's HTTP
/// count) to become a protocol session like a TCP one: the same
/// connection limits, hello timeout, `hello` and tokens, limits and stats.
extension Server {
    /// The path that upgrades.
    static let webSocketPath = "/ws"

    /// Answers `GET /ws`: a refusal (then the HTTP connection closes) or
    /// the upgrade.
    func answerWebSocket(_ head: HTTPRequestHead, on connection: HTTPConnection) {
        let key: String
        switch webSocketAdmission(head, tls: connection.stream.tls != nil) {
        case .accept(let accepted):
            key = accepted
        case .refuse(let refusal):
            counters.webSocketRefused += 1
            logger.debug("websocket upgrade refused", metadata: [
                "status": "\(refusal.status.rawValue)", "reason": "\(refusal.body)", "peer": "\(connection.peerHost ?? "?")"])
            connection.send(refusal.bytes(keepAlive: false, headOnly: head.method == .head))
            return closeHTTP(connection)
        }
        let upgrade = WebSocketHandshake.response(accept: WebSocketHandshake.accept(key: key, sha1: { SHA1.digest($0) }))
        let host = connection.peerHost
        if let limit = connectionLimitReached(host: host) {
            return refuseWebSocket(connection, upgrade: upgrade, limit: limit, host: host)
        }
        counters.webSocketUpgrades += 1
        let early = connection.handOver()
        releaseHTTP(connection)
        let stream = connection.stream
        // The 101 goes first; the session's frames queue behind it.
        stream.enqueue(OwnedBytes(upgrade))
        stream.flush()
        stream.tcp.setLiveness(config.tcpLiveness)
        let upgraded = admit(stream, host: host, webSocket: WebSocketLink(maxMessageBytes: config.maxFrame))
        // Bytes that followed the head in the same read (plaintext, also
        // over TLS: the TLS stream has decrypted them already): the
        // connection's first input.
        if let upgraded, !early.isEmpty {
            early.withUnsafeBytes { upgraded.receivedWebSocket($0) }
        }
    }

    /// The key of an acceptable upgrade request, or the response refusing it
    /// (each names what was wrong and what is allowed).
    func webSocketAdmission(_ head: HTTPRequestHead, tls: Bool) -> WebSocketAdmission {
        // Tokens travel in `hello` alone: a URL lands in logs, histories and
        // Referer headers.
        if let query = head.query {
            let names = query.split(separator: "&").map { $0.split(separator: "=", maxSplits: 1).first.map(String.init) ?? "" }
            let message = names.contains(where: { ["token", "access_token"].contains($0.lowercased()) })
                ? "/ws takes no token in its URL: send it in the hello message ({\"type\":\"hello\",\"token\":…}), "
                    + "never in a URL or cookie (PROTOCOL.md, WebSocket transport)\n"
                : "/ws takes no query (got \(String(query.prefix(100)).debugDescription)); the token goes in hello\n"
            return .refuse(HTTPResponse(status: .badRequest, body: message))
        }
        guard case .running = phase else {
            return .refuse(HTTPResponse(status: .serviceUnavailable, body: "the server is \(phase.name): retry later\n"))
        }
        let key: String
        switch WebSocketHandshake.validate(head) {
        case .success(let accepted):
            key = accepted
        case .failure(let refusal):
            var response = HTTPResponse(status: refusal.status, body: refusal.message + "\n")
            response.extraFields = refusal.fields.map { ($0.name, $0.value) }
            return .refuse(response)
        }
        if let listener = config.http, !tls, !ServerConfig.isLoopback(listener.host), !config.allowPlainHTTP {
            return .refuse(HTTPResponse(status: .forbidden, body: "/ws is not served on the non-loopback HTTP listener "
                + "\(listener.host) without TLS: tokens and boards would cross the network in clear. Start the server "
                + "with --allow-plain-http to accept that.\n"))
        }
        let scheme = tls ? "https" : "http"
        guard let hostField = head.field("host"), let own = WebOrigin(scheme: scheme, hostField: hostField) else {
            return .refuse(HTTPResponse(status: .badRequest, body: "the Host header \((head.field("host") ?? "").prefix(100).debugDescription) "
                + "is not host[:port]\n"))
        }
        if tokens == nil, !own.isLoopback {
            return .refuse(HTTPResponse(status: .forbidden, body: "Host \(hostField.prefix(100).debugDescription) is not a loopback "
                + "name: without --tokens, /ws serves only pages loaded from localhost, 127.0.0.1 or [::1] (any "
                + "port), so that another site cannot reach it by DNS rebinding. Start the server with --tokens FILE "
                + "to serve other names.\n"))
        }
        if let originField = head.field("origin") {
            let origin = WebOrigin(originField)
            guard let origin, origin == own || config.httpAllowedOrigins.contains(origin) else {
                let allowed = ([own] + config.httpAllowedOrigins).map(\.description).joined(separator: ", ")
                return .refuse(HTTPResponse(status: .forbidden, body: "origin \(originField.prefix(200).debugDescription) may "
                    + "not open /ws: allowed are the page's own origin and those given with --http-allow-origin "
                    + "(\(allowed))\n"))
            }
        }
        return .accept(key: key)
    }

    /// A connection limit refuses the session: upgraded all the same, so
    /// that the client reads why (`error` and `bye` `server_busy`, then
    /// Close 1013 Try Again Later), as a TCP client does; then closed.
    private func refuseWebSocket(_ connection: HTTPConnection, upgrade: [UInt8], limit: ConnectionLimit, host: String?) {
        counters.connectionsRefused[limit.rawValue, default: 0] += 1
        logger.debug("connection refused", metadata: ["limit": "\(limit.rawValue)", "peer": "\(host ?? "?")", "transport": "ws"])
        let message = limit.refusal(host: host, config: config)
        var bytes = upgrade
        do {
            let error = try encoder.frame(ErrorPush(error: ProtocolError(.serverBusy, message)))
            let bye = try encoder.frame(ByePush(reason: .serverBusy))
            bytes += WebSocketFrame.encode(opcode: .text, payload: error.body)
            bytes += WebSocketFrame.encode(opcode: .text, payload: bye.body)
            counters.framesOut += 2
            counters.bytesOut += error.count + bye.count
        } catch {
            logger.error("encoding failed", metadata: ["error": "\(error)"])
        }
        bytes += WebSocketFrame.close(code: WebSocketLink.closeCode(for: .serverBusy), reason: ByeReason.serverBusy.rawValue)
        connection.send(bytes)
        closeHTTP(connection)
    }
}

/// What `GET /ws` gets: the upgrade (with the request's key) or a refusal.
enum WebSocketAdmission {
    case accept(key: String)
    case refuse(HTTPResponse)
}
