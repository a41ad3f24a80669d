import OutaTimeProtocol
import UV

extension Server {
    /// Bytes from the socket (the loop's shared read buffer): decode frames in
    /// place; only a partial frame is copied by the decoder.
    func received(_ bytes: UnsafeRawBufferPointer, on session: Session) {
        guard session.state == .awaitingHello || session.state == .ready else { return }  // closing: discard
        counters.bytesIn += bytes.count
        session.lastActivity = loop.now
        do {
            try session.decoder.feed(bytes) { body in
                guard session.state == .awaitingHello || session.state == .ready else { return }
                if session.isBlocked {
                    session.backlog.append(Array(body))
                } else {
                    self.process(body, on: session)
                }
            }
        } catch {
            // The stream is out of sync: report, say bye, close (contract §1).
            session.send(ErrorPush(error: error.protocolError))
            close(session, bye: .protocolError)
            return
        }
        if session.isBlocked, session.backlog.count >= Self.backlogFrames
            || session.backlog.reduce(0, { $0 + $1.count }) >= Self.backlogBytes {
            session.stream.stopReading()
        }
    }

    /// While a request waits for storage, up to this many later frames (or
    /// bytes) of the same connection wait in its backlog before the server
    /// stops reading from it (TCP backpressure). Stopping and restarting
    /// with every waiting command cost two `epoll_ctl` calls per command
    /// (docs/BENCHMARKS.md); a client with one request in flight now never
    /// reaches the limit.
    static let backlogFrames = 16
    static let backlogBytes = 256 * 1024

    /// One complete frame body: parse the envelope and dispatch.
    func process(_ body: UnsafeRawBufferPointer, on session: Session) {
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
        dispatch(request, on: session)
    }

    /// Marks `session` as waiting for storage: its later frames wait.
    func block(_ session: Session) {
        session.isBlocked = true
    }

    /// Ends a wait: runs the frames that arrived meanwhile, in order, then
    /// resumes reading unless one of them blocked again.
    func unblock(_ session: Session) {
        session.isBlocked = false
        while !session.isBlocked, !session.backlog.isEmpty,
              session.state == .awaitingHello || session.state == .ready {
            let body = session.backlog.removeFirst()
            body.withUnsafeBytes { process($0, on: session) }
        }
        if session.backlog.isEmpty { session.backlog = [] }
        guard !session.isBlocked, session.state == .awaitingHello || session.state == .ready,
              phase == .running else { return }
        try? session.stream.resumeReading()
    }

    /// EOF or a read error from the peer.
    func readEnded(on session: Session, error: UVError) {
        session.sawEOF = true
        switch session.state {
        case .awaitingHello, .ready:
            if error.isEOF {
                // Orderly half-close: send what is queued, then close.
                beginClosing(session, reason: .peerClosed)
            } else {
                destroy(session, reason: .readError)
            }
        case .closing:
            // We said bye and were waiting for the peer to finish.
            if session.stream.isDrained { destroy(session, reason: session.closeReason ?? .bye) }
        case .closed:
            break
        }
    }
}
