import OutaTimeProtocol

extension Server {
    /// `hello`: protocol check, authentication, identity.
    func hello(_ request: Request, on session: Session) throws(ProtocolError) -> Handled {
        guard case .awaitingHello = session.state else {
            throw ProtocolError(.invalidRequest, "'hello' was already sent on this connection (session \(session.id))")
        }
        guard try Self.asksForProtocolOne(request) else {
            session.fail(request.id, ProtocolError(.unsupportedProtocol,
                "protocol \(request.value("protocol")?.errorDescription ?? "?") is not supported; this server speaks protocol 1"))
            close(session, bye: .unsupportedProtocol)
            return .replied
        }
        let client = try request.optionalString("client", maxLength: 100, freeText: true)
        let name = try request.optionalString("name", maxLength: 100, freeText: true)
        let token = try request.optionalString("token", maxLength: 4096)
        var role = Role.operate
        var displayName = name ?? client ?? "anonymous"
        if let tokens {
            if let refusal = helloLockout(of: session) {
                counters.hellosLockedOut += 1
                session.fail(request.id, refusal)
                close(session, bye: .unauthorized)
                return .replied
            }
            // A token, when given, decides alone. Without one, the subject of
            // a client certificate the TLS listener verified (mTLS) may name
            // a `certificate_subject` entry. The token's value is never
            // logged or echoed; the token lookup takes the same time whichever
            // entry matches (TokenTable.match).
            let subject = token == nil ? verifiedCertificateSubject(of: session) : nil
            let entry = if let token { tokens.match(PresentedToken(token)) }
                        else if let subject { tokens.match(certificateSubject: subject) }
                        else { AccessToken?.none }
            guard let entry else {
                let problem = if token != nil { "the token is not valid" }
                    else if let subject { "no token was given, and no entry maps the client certificate's subject '\(subject.prefix(200))'" }
                    else { "no token was given" }
                countFailedHello(from: session)
                logFailedHello(on: session, problem: problem, client: client, name: name)
                return refuseSlowly(request.id, ProtocolError(.unauthorized,
                    "this server requires a token in 'hello' and \(problem)"), on: session)
            }
            role = entry.role
            displayName = entry.name
            session.credential = entry
        }
        if displayName.isEmpty { displayName = "anonymous" }
        session.role = role
        session.displayName = displayName
        session.transition(to: .ready)
        logger.debug("hello", metadata: ["conn.id": "\(session.id)", "name": "\(displayName)",
                                         "role": "\(role.rawValue)", "client": "\(client ?? "-")"])
        session.reply(request.id, HelloResult(server: Self.version, protocol: 1, session: session.id,
                                              heartbeatMs: config.heartbeatMs, maxFrame: config.maxFrame,
                                              role: role.rawValue, node: config.node))
        return .replied
    }

    /// The refusal for a `hello` from an address that failed too often
    /// (``ServerConfig/maxFailedHellos``), checked before the token: once
    /// locked out, even the right token is refused until the window ends,
    /// so guessing stops paying. Nil when the address may try.
    private func helloLockout(of session: Session) -> ProtocolError? {
        guard config.maxFailedHellos > 0, let host = session.peerHost,
              let remainingMs = addresses.lockout(of: host, now: loop.now, limit: config.maxFailedHellos)
        else { return nil }
        let seconds = (remainingMs + 999) / 1000
        logger.debug("hello refused: address locked out", metadata: ["conn.id": "\(session.id)", "peer": "\(host)"])
        return ProtocolError(.unauthorized,
            "address \(host) is locked out for \(seconds) s after \(config.maxFailedHellos) failed hellos "
                + "(--max-failed-hellos, per \(Self.duration(ms: config.failedHelloWindowMs))); every hello from it is refused "
                + "until then, even with a valid token")
    }

    /// Answers a `hello` that failed for its token with `failure` and `bye`
    /// `unauthorized` ``ServerConfig/failedHelloDelayMs`` later, on a timer
    /// (the loop goes on): each guess costs the guesser that long. The
    /// connection's input waits meanwhile, like a read off the loop.
    private func refuseSlowly(_ id: RequestID?, _ failure: ProtocolError, on session: Session) -> Handled {
        guard config.failedHelloDelayMs > 0 else {
            session.fail(id, failure)
            close(session, bye: .unauthorized)
            return .replied
        }
        let slot = session.requests.reserve()
        slowedHellos[session.serial] = SlowedHello(slot: slot, id: id, failure: failure)
        helloDelays.schedule(session.serial, at: loop.now + UInt64(config.failedHelloDelayMs))
        return .reading(slot)
    }

    /// A slowed `hello` failure is due: its reply, then `bye` `unauthorized`.
    func slowedHelloDue(_ serial: Int) {
        guard let slowed = slowedHellos.removeValue(forKey: serial),
              let session = sessions[serial], session.state.isOpen else { return }
        session.fill(slowed.slot, id: slowed.id, failure: slowed.failure)
        close(session, bye: .unauthorized)
    }

    /// `60 s`, or `250 ms` for a window that is not whole seconds.
    private static func duration(ms: Int) -> String {
        ms % 1000 == 0 ? "\(ms / 1000) s" : "\(ms) ms"
    }

    /// Counts a `hello` refused for its token against the peer's address.
    private func countFailedHello(from session: Session) {
        counters.hellosFailed += 1
        guard config.maxFailedHellos > 0, let host = session.peerHost else { return }
        addresses.helloFailed(from: host, now: loop.now, windowMs: UInt64(config.failedHelloWindowMs))
    }

    /// The subject of the client certificate `session` presented, when its
    /// listener requires client certificates (`--tls-client-ca`) and the
    /// certificate was verified against them; nil on plaintext, and on a TLS
    /// listener that checks no client certificates.
    func verifiedCertificateSubject(of session: Session) -> String? {
        guard let tls = session.stream.tls, tls.context.requiresClientCertificate else { return nil }
        return tls.peerCertificateSubject
    }

    /// Whether `hello`'s `protocol` is 1; false for any other integer
    /// (`unsupported_protocol`, then `bye`). Integers are every `.int` and,
    /// beyond 64 bits, every `.double` of magnitude ≥ 2^63: the JSON reader
    /// gives `.int` for each exact integer that fits, so a smaller `.double`
    /// has a fraction.
    ///
    /// - Throws: `invalid_request` when `protocol` is missing or not an
    ///   integer (`"1"`, `1.5`, `1e-400`); the connection keeps awaiting `hello`.
    static func asksForProtocolOne(_ request: Request) throws(ProtocolError) -> Bool {
        switch request.value("protocol") {
        case .int(let version)?:
            return version == 1
        case .double(let number)? where number.magnitude >= 0x1p63:
            return false
        case nil, .null?:
            throw ProtocolError(.invalidRequest, "field 'protocol' is required (an integer; this server speaks protocol 1)")
        case let other?:
            throw ProtocolError(.invalidRequest,
                "field 'protocol' must be an integer (this server speaks protocol 1), got \(other.errorDescription)")
        }
    }
}

/// A failed `hello` whose answer waits (``Server/refuseSlowly(_:_:on:)``).
struct SlowedHello {
    let slot: ReplySlot
    let id: RequestID?
    let failure: ProtocolError
}
