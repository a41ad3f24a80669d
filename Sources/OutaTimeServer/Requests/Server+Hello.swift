import OutaTimeProtocol

extension Server {
    /// `hello`: protocol check, authentication, identity.
    func hello(_ request: Request, on session: Session) throws(ProtocolError) -> Handled {
        guard case .awaitingHello = session.state else {
            throw ProtocolError(.invalidRequest, "'hello' was already sent on this connection (session \(session.id))")
        }
        let version = try request.int("protocol", in: 0...Int64(Int32.max))
        guard version == 1 else {
            session.fail(request.id, ProtocolError(.unsupportedProtocol,
                "protocol \(version) is not supported; this server speaks protocol 1"))
            close(session, bye: .unsupportedProtocol)
            return .replied
        }
        let client = try request.optionalString("client", maxLength: 100)
        let name = try request.optionalString("name", maxLength: 100)
        let token = try request.optionalString("token", maxLength: 4096)
        var role = Role.operate
        var displayName = name ?? client ?? "anonymous"
        if let tokens {
            // The token's value is never logged or echoed; the lookup takes
            // the same time whichever entry matches (TokenTable.match).
            guard let token, let entry = tokens.match(PresentedToken(token)) else {
                let problem = token == nil ? "no token was given" : "the token is not valid"
                session.fail(request.id, ProtocolError(.unauthorized,
                    "this server requires a token in 'hello' and \(problem)"))
                close(session, bye: .unauthorized)
                return .replied
            }
            role = entry.role
            displayName = entry.name
            session.credential = entry
        }
        if displayName.isEmpty { displayName = "anonymous" }
        session.role = role
        session.watcher = Watcher(session: session.id, name: displayName)
        session.transition(to: .ready)
        logger.debug("hello", metadata: ["conn.id": "\(session.id)", "name": "\(displayName)",
                                         "role": "\(role.rawValue)", "client": "\(client ?? "-")"])
        session.reply(request.id, HelloResult(server: Self.version, protocol: 1, session: session.id,
                                              heartbeatMs: config.heartbeatMs, maxFrame: config.maxFrame,
                                              role: role.rawValue))
        return .replied
    }
}
