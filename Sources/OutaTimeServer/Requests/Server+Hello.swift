import OutaTimeProtocol

extension Server {
    /// `hello`: protocol check, authentication, identity.
    func hello(_ request: Request, on session: Connection) throws(ProtocolError) -> Handled {
        guard case .awaitingHello = session.state else {
            throw ProtocolError(.invalidRequest, "'hello' was already sent on this connection (session \(session.id))")
        }
        guard try Self.asksForProtocolOne(request) else {
            session.fail(request.id, ProtocolError(.unsupportedProtocol,
                "protocol \(request.value("protocol")?.errorDescription ?? "?") is not supported; this server speaks protocol 1"))
            session.close(bye: .unsupportedProtocol)
            return .replied
        }
        let client = try request.optionalString("client", maxLength: 100, freeText: true)
        let name = try request.optionalString("name", maxLength: 100, freeText: true)
        let token = try request.optionalString("token", maxLength: 4096)
        let resume = try request.optionalString("resume", maxLength: 64)
        guard let tokens else {
            admit(session, role: .operate, name: name ?? client ?? "anonymous", client: client, resume: resume)
            session.reply(request.id, helloResult(session))
            return .replied
        }
        // A token, when given, decides alone. Without one, the subject of a
        // client certificate the TLS listener verified (mTLS) may name a
        // `certificate_subject` entry. The token's value is never logged or
        // echoed; the token lookup takes the same time whichever entry
        // matches (TokenTable.match). The delay is decided before the
        // check (HelloThrottle: both outcomes wait alike once throttled).
        let presented = token.map(PresentedToken.init)
        let now = time.now
        let failures = throttle.failures(address: session.peerHost, token: presented?.digest, now: now)
        let subject = token == nil ? verifiedCertificateSubject(of: session) : nil
        let entry = if let presented { tokens.match(presented) }
                    else if let subject { tokens.match(certificateSubject: subject) }
                    else { AccessToken?.none }
        let delayMs = throttle.delayMs(failures: failures, succeeded: entry != nil)
        if throttle.isThrottled(failures) {
            counters.hellosThrottled += 1
            logger.debug("hello throttled", metadata: ["conn.id": "\(session.id)", "peer": "\(session.peerHost ?? "?")",
                                                       "failures": "\(failures)", "delay_ms": "\(delayMs)"])
        }
        let outcome: SlowedHello.Outcome
        if let entry {
            outcome = .admit(entry, client: client, resume: resume)
        } else {
            let problem = if token != nil { "the token is not valid" }
                else if let subject { "no token was given, and no entry maps the client certificate's subject '\(subject.prefix(200))'" }
                else { "no token was given" }
            counters.hellosFailed += 1
            if config.maxFailedHellos > 0 { throttle.failed(address: session.peerHost, token: presented?.digest, now: now) }
            logFailedHello(on: session, problem: problem, client: client, name: name)
            outcome = .refuse(ProtocolError(.unauthorized, "this server requires a token in 'hello' and \(problem)"))
        }
        guard delayMs > 0 else {
            answer(request.id, outcome, on: session)
            return .replied
        }
        // The answer waits on a timer (the loop goes on); the connection's
        // input waits meanwhile, like a read off the loop.
        let slot = session.reserveReply()
        slowedHellos[session.serial] = SlowedHello(slot: slot, id: request.id, outcome: outcome)
        helloDelays.schedule(session.serial, at: now + delayMs)
        return .reading(slot)
    }

    /// Answers a `hello` now: its result, or its failure then `bye` `unauthorized`.
    private func answer(_ id: RequestID?, _ outcome: SlowedHello.Outcome, on session: Connection) {
        switch outcome {
        case .admit(let entry, let client, let resume):
            session.credential = entry
            admit(session, role: entry.role, name: entry.name, client: client, resume: resume)
            session.reply(id, helloResult(session))
        case .refuse(let failure):
            session.fail(id, failure)
            session.close(bye: .unauthorized)
        }
    }

    /// A slowed `hello` is due: its result (and the input held behind it
    /// runs), or its failure then `bye` `unauthorized`.
    func slowedHelloDue(_ serial: Int) {
        guard let slowed = slowedHellos.removeValue(forKey: serial),
              let session = connections[serial], session.state.isOpen else { return }
        switch slowed.outcome {
        case .admit(let admitted, let client, let resume):
            // A reload while the hello waited may have withdrawn or changed the entry.
            guard let entry = tokens?.entry(sameKeyAs: admitted) else {
                session.fill(slowed.slot, id: slowed.id, failure: ProtocolError(.unauthorized,
                    "this server requires a token in 'hello' and the token is no longer listed (the tokens file was reloaded)"))
                session.close(bye: .unauthorized)
                return
            }
            session.credential = entry
            admit(session, role: entry.role, name: entry.name, client: client, resume: resume)
            session.fill(slowed.slot, id: slowed.id, helloResult(session))
            session.readAnswered(slowed.slot)
        case .refuse(let failure):
            session.fill(slowed.slot, id: slowed.id, failure: failure)
            session.close(bye: .unauthorized)
        }
    }

    /// The session is past `hello`: its role and display name, its resume
    /// secret; the connection whose `resume_key` it presented is replaced
    /// first, so its subscriptions have ended (presence `left`) before the
    /// `hello` reply lets the new one subscribe.
    private func admit(_ session: Connection, role: Role, name: String, client: String?, resume: String?) {
        if let resume { replace(resumedBy: resume, on: session) }
        session.role = role
        session.displayName = name.isEmpty ? "anonymous" : name
        session.resumeSecret = .random()
        session.transition(to: .ready)
        logger.debug("hello", metadata: ["conn.id": "\(session.id)", "name": "\(session.displayName)",
                                         "role": "\(role.rawValue)", "client": "\(client ?? "-")",
                                         "peer": "\(session.peerHost ?? "?")"])
    }

    private func helloResult(_ session: Connection) -> HelloResult {
        HelloResult(server: Self.version, protocol: 1, session: session.id, heartbeatMs: config.heartbeatMs,
                    maxFrame: config.maxFrame, role: session.role.rawValue, node: config.node,
                    resumeKey: ResumeKey(serial: session.serial, secret: session.resumeSecret).text)
    }

    /// The subject of the client certificate `session` presented, when its
    /// listener requires client certificates (`--tls-client-ca`) and the
    /// certificate was verified against them; nil on plaintext, and on a TLS
    /// listener that checks no client certificates.
    func verifiedCertificateSubject(of session: Connection) -> String? {
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

/// A `hello` whose answer waits (``HelloThrottle``).
struct SlowedHello {
    /// What the answer will be.
    enum Outcome {
        /// Accepted with this tokens-file entry (`client` for the log);
        /// `resume`: the `resume` key it presented.
        case admit(AccessToken, client: String?, resume: String?)
        /// Refused: the failure, then `bye` `unauthorized`.
        case refuse(ProtocolError)
    }
    let slot: ReplySlot
    let id: RequestID?
    let outcome: Outcome
}
