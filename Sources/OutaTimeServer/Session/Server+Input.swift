import DequeModule
import OutaTimeProtocol
import UV

/// A connection's input: bytes → frames → requests, in order through the
/// session's ``RequestQueue``.
extension Server {
    /// Bytes from the socket (the loop's shared read buffer): decode frames in
    /// place; only a partial frame is copied by the decoder.
    func received(_ bytes: UnsafeRawBufferPointer, on session: Session) {
        assertOnLoopThread()
        guard session.state.isOpen else { return }  // closing: discard
        counters.bytesIn += bytes.count
        do {
            try session.decoder.feed(bytes) { body in
                guard session.state.isOpen else { return }
                // A complete frame is activity; bytes of one that never
                // ends are not (one a second would keep a connection for ever).
                session.lastActivity = self.loop.now
                if session.requests.isWaiting {
                    session.requests.hold(body)
                } else {
                    self.run(body, on: session)
                }
            }
        } catch {
            // A frame length of 0x50…… or 0x0D…… before hello is the start of
            // a PROXY header ("PROXY " or v2's CR LF): say so in the log.
            if case .awaitingHello = session.state, case .tooLarge(let length, _) = error {
                _ = logUntrustedProxyHeader(session, firstByte: UInt8(truncatingIfNeeded: length >> 24))
            }
            // The stream is out of sync: report, say bye, close (contract §1).
            session.send(ErrorPush(error: error.protocolError))
            close(session, bye: .protocolError)
            return
        }
        pauseReadingIfFull(session)
    }

    /// One complete frame body: parse the envelope and run the request.
    func run(_ body: UnsafeRawBufferPointer, on session: Session) {
        if overRequestRate(session) {
            session.requests.park(.rateLimited(frame: Array(body)))
            pauseReadingIfFull(session)
            return
        }
        counters.framesIn += 1
        let request: Request
        do {
            request = try Request.parse(body)
        } catch {
            switch error {
            case .badJSON(let failure):
                session.send(ErrorPush(error: failure))
            case .invalid(let id, let failure):
                session.fail(id, failure)
            }
            return
        }
        run(request, on: session)
    }

    /// Runs one request and parks the input if it has to wait.
    private func run(_ request: Request, on session: Session) {
        switch dispatch(request, on: session) {
        case .replied, .pending:
            break
        case .retry(let channel):
            session.requests.park(.retry(request))
            channel.waiters.append(session)
        case .reading(let slot):
            session.requests.park(.read(slot))
        }
    }

    /// Ends a wait: the parked request runs again (or fails with `failure`),
    /// then the frames that arrived meanwhile, in order, until one parks.
    func resume(_ session: Session, failing failure: ProtocolError? = nil) {
        guard session.state.isOpen, let (parked, held) = session.requests.unpark() else { return }
        switch parked {
        case .retry(let request):
            if let failure {
                session.fail(request.id, failure)
            } else {
                run(request, on: session)
            }
        case .rateLimited(let frame):
            frame.withUnsafeBytes { run($0, on: session) }
        case .read:
            break
        }
        var frames = held
        while !session.requests.isWaiting, session.state.isOpen, let body = frames.popFirst() {
            body.withUnsafeBytes { run($0, on: session) }
        }
        session.requests.requeue(frames)
        resumeReadingIfRoom(session)
        closeIfPeerDone(session)
    }

    /// After the peer's EOF, closes once every request it sent is answered.
    func closeIfPeerDone(_ session: Session) {
        guard session.sawEOF, session.state.isOpen, !session.requests.isBusy else { return }
        beginClosing(session, reason: .peerClosed)
    }

    /// A read off the loop answered `slot`: resume the input it held.
    func readAnswered(_ slot: ReplySlot, on session: Session) {
        guard case .waiting(.read(let parked), _) = session.requests.input, parked == slot else { return }
        resume(session)
    }

    /// Whether `session` has sent its ``ServerConfig/maxRequestsPerSecond``
    /// in the current window (counting the frame about to run when not).
    /// Windows are fixed, one after another, each starting at the first
    /// frame after the previous one ended. Over the rate, the next window's
    /// start is scheduled and counted as a pause: the caller parks the frame
    /// and stops reading, so the kernel holds the rest (back-pressure on the
    /// sender alone) and every request is answered, in order, later.
    func overRequestRate(_ session: Session) -> Bool {
        let limit = config.maxRequestsPerSecond
        guard limit > 0 else { return false }
        let now = loop.now
        if now >= session.rateWindowEnd {
            session.rateWindowEnd = now + UInt64(config.requestRateWindowMs)
            session.requestsInWindow = 0
        }
        guard session.requestsInWindow >= limit else {
            session.requestsInWindow += 1
            return false
        }
        counters.requestRatePauses += 1
        rateWakeups.schedule(session.serial, at: session.rateWindowEnd)
        logger.debug("request rate reached, reading paused", metadata: [
            "conn.id": "\(session.id)", "max_requests_per_second": "\(limit)"])
        return true
    }

    /// A rate-limited session's next window began: its parked frame and the
    /// ones held behind it run (until the rate parks it again), and reading
    /// resumes.
    func rateWindowBegan(_ serial: Int) {
        guard let session = sessions[serial], case .waiting(.rateLimited, _) = session.requests.input else { return }
        resume(session)
    }

    /// Stops reading while the session's queue is full (TCP backpressure).
    func pauseReadingIfFull(_ session: Session) {
        guard !session.isReadingPaused, session.requests.isFull, session.state.isOpen else { return }
        session.isReadingPaused = true
        session.stream.stopReading()
    }

    /// Reads again once the queue has room.
    func resumeReadingIfRoom(_ session: Session) {
        guard session.isReadingPaused, !session.requests.isFull, session.state.isOpen,
              case .running = phase else { return }
        session.isReadingPaused = false
        try? session.stream.resumeReading()
    }

    /// EOF or a read error from the peer.
    func readEnded(on session: Session, error: UVError) {
        assertOnLoopThread()
        session.sawEOF = true
        switch session.state {
        case .awaitingHello, .ready:
            if error.isEOF {
                // Orderly half-close: answer what the peer sent (pipelined
                // commands may still be committing), then close.
                closeIfPeerDone(session)
            } else if let failure = session.stream.tlsFailure {
                // A handshake whose first byte was `P` or CR was a PROXY header.
                if !logUntrustedProxyHeader(session, firstByte: session.stream.tls?.firstByte) {
                    logger.info("TLS connection failed", metadata: [
                        "conn.id": "\(session.id)", "peer": "\(session.peerHost ?? "?")", "error": "\(failure)"])
                }
                destroy(session, reason: .tlsFailed)
            } else {
                destroy(session, reason: error.isTimedOut ? .timedOut : .readError)
            }
        case .closing(let reason, _):
            // We said bye and were waiting for the peer to finish.
            if session.stream.isDrained { destroy(session, reason: reason) }
        case .closed:
            break
        }
    }
}
