import DequeModule
import OutaTimeProtocol
import UV

/// A connection's input: bytes → frames → requests, in order through its
/// ``RequestQueue``, each run by the router (``ConnectionRouter/dispatch(_:on:)``).
extension Connection {
    /// Starts reading; false (the connection destroyed) if the socket
    /// cannot read. Each callback captures the connection alone, strongly:
    /// Swift then uses the connection itself as the closure's context.
    /// Capturing `[unowned self]` with another reference allocated a
    /// 32-byte box per callback, 144 bytes a connection with malloc's
    /// rounding (docs/BENCHMARKS.md, idle memory). The cycle this makes
    /// (connection → stream → callback → connection) ends when
    /// ``destroy(reason:)`` closes the stream, which drops its callbacks.
    func start() -> Bool {
        stream.onWriteError = { error in
            self.context.logger.debug("write failed", metadata: ["conn.id": "\(self.id)", "error": "\(error)"])
            self.destroy(reason: error.isTimedOut ? .timedOut : .writeError)
        }
        do {
            if webSocket == nil {
                try stream.startReading(onData: { bytes in self.received(bytes) },
                                        onEnd: { error in self.readEnded(error: error) })
            } else {
                try stream.startReading(onData: { bytes in self.receivedWebSocket(bytes) },
                                        onEnd: { error in self.readEnded(error: error) })
            }
        } catch {
            destroy(reason: .readError)
            return false
        }
        return true
    }

    /// The connection's first bytes as read from the socket before it
    /// existed (after a PROXY header; ciphertext on TLS): as if read now.
    func receivedEarly(_ bytes: UnsafeRawBufferPointer) {
        switch (stream, webSocket) {
        case (.tls(let tls), _): tls.receivedEarly(bytes)
        case (.tcp, nil): received(bytes)
        case (.tcp, _?): receivedWebSocket(bytes)
        }
    }

    /// Bytes from the socket (the loop's shared read buffer): decode frames in
    /// place; only a partial frame is copied by the decoder.
    func received(_ bytes: UnsafeRawBufferPointer) {
        // The context goes down the per-frame calls as a (borrowed)
        // parameter: read from `self.context` in each of them it was
        // retained and released once a frame, 3 of them a publish
        // (callgrind, issue 28).
        let context = self.context
        context.assertOnLoopThread()
        guard state.isOpen else { return }  // closing: discard
        context.counters.bytesIn += bytes.count
        do {
            try decoder.feed(bytes) { body in
                guard self.state.isOpen else { return }
                // A complete frame is activity; bytes of one that never
                // ends are not (one a second would keep a connection for ever).
                self.lastActivity = context.time.now
                self.take(body, context)
            }
        } catch {
            // A frame length of 0x50…… or 0x0D…… before hello is the start of
            // a PROXY header ("PROXY " or v2's CR LF): say so in the log.
            if case .awaitingHello = state, case .tooLarge(let length, _) = error {
                _ = context.router.logUntrustedProxyHeader(self, firstByte: UInt8(truncatingIfNeeded: length >> 24))
            }
            // The stream is out of sync: report, say bye, close (contract §1).
            send(ErrorPush(error: error.protocolError))
            close(bye: .protocolError)
            return
        }
        pauseReadingIfFull()
    }

    /// One whole frame body from the framing (either transport): it runs
    /// now, or waits behind a parked request.
    @inline(__always)
    func take(_ body: UnsafeRawBufferPointer, _ context: ConnectionContext) {
        if requests.isWaiting {
            requests.hold(body)
        } else {
            run(body, context)
        }
    }

    /// One complete frame body: parse the envelope and run the request.
    func run(_ body: UnsafeRawBufferPointer, _ context: ConnectionContext) {
        if overRequestRate(context) {
            requests.park(.rateLimited(frame: Array(body)))
            pauseReadingIfFull()
            return
        }
        context.counters.framesIn += 1
        let request: Request
        do {
            request = try Request.parse(body)
        } catch {
            switch error {
            case .badJSON(let failure):
                send(ErrorPush(error: failure))
            case .invalid(let id, let failure):
                fail(id, failure)
            }
            return
        }
        run(request, context)
    }

    /// Runs one request and parks the input if it has to wait.
    private func run(_ request: Request, _ context: ConnectionContext) {
        switch context.router.dispatch(request, on: self) {
        case .replied, .pending:
            break
        case .retry(let channel):
            requests.park(.retry(request))
            channel.waiters.append(self)
        case .reading(let slot):
            requests.park(.read(slot))
        }
    }

    /// Ends a wait: the parked request runs again (or fails with `failure`),
    /// then the frames that arrived meanwhile, in order, until one parks.
    func resume(failing failure: ProtocolError? = nil) {
        guard state.isOpen, let (parked, held) = requests.unpark() else { return }
        let context = self.context
        switch parked {
        case .retry(let request):
            if let failure {
                fail(request.id, failure)
            } else {
                run(request, context)
            }
        case .rateLimited(let frame):
            frame.withUnsafeBytes { run($0, context) }
        case .read:
            break
        }
        var frames = held
        while !requests.isWaiting, state.isOpen, let body = frames.popFirst() {
            body.withUnsafeBytes { run($0, context) }
        }
        requests.requeue(frames)
        resumeReadingIfRoom()
        closeIfPeerDone()
    }

    /// After the peer's EOF, closes once every request it sent is answered.
    func closeIfPeerDone() {
        guard case .ended = readSide, state.isOpen, !requests.isBusy else { return }
        beginClosing(reason: .peerClosed)
    }

    /// A read off the loop answered `slot`: resume the input it held.
    func readAnswered(_ slot: ReplySlot) {
        guard case .waiting(.read(let parked), _) = requests.input, parked == slot else { return }
        resume()
    }

    /// Whether this connection has sent its ``ConnectionLimits/requestsPerWindow``
    /// in the current window (counting the frame about to run when not).
    /// Windows are fixed, one after another, each starting at the first
    /// frame after the previous one ended. Over the rate, the next window's
    /// start is scheduled and counted as a pause: the caller parks the frame
    /// and stops reading, so the kernel holds the rest (back-pressure on the
    /// sender alone) and every request is answered, in order, later.
    func overRequestRate(_ context: ConnectionContext) -> Bool {
        let limit = context.limits.requestsPerWindow
        guard limit > 0 else { return false }
        let now = context.time.now
        if now >= rateWindowEnd {
            rateWindowEnd = now + UInt64(context.limits.requestRateWindowMs)
            requestsInWindow = 0
        }
        guard requestsInWindow >= limit else {
            requestsInWindow += 1
            return false
        }
        context.counters.requestRatePauses += 1
        context.router.wakeAtNextWindow(self, at: rateWindowEnd)
        context.logger.debug("request rate reached, reading paused", metadata: [
            "conn.id": "\(id)", "max_requests_per_second": "\(limit)"])
        return true
    }

    /// The next request-rate window began: the parked frame and the ones
    /// held behind it run (until the rate parks it again), and reading
    /// resumes.
    func rateWindowBegan() {
        guard case .waiting(.rateLimited, _) = requests.input else { return }
        resume()
    }

    /// Stops reading while the request queue is full (TCP backpressure).
    func pauseReadingIfFull() {
        guard case .reading = readSide, requests.isFull, state.isOpen else { return }
        readSide = .paused
        stream.stopReading()
    }

    /// Reads again once the queue has room.
    func resumeReadingIfRoom() {
        guard case .paused = readSide, !requests.isFull, state.isOpen, context.takesInput else { return }
        readSide = .reading
        try? stream.resumeReading()
    }

    /// The server drains: nothing more is read (the connection stays open
    /// until its `bye server_shutdown`; ``resumeReadingIfRoom()`` does not
    /// read again while ``ConnectionContext/takesInput`` is false).
    func stopReadingForShutdown() {
        stream.stopReading()
    }

    /// EOF or a read error from the peer.
    func readEnded(error: UVError) {
        context.assertOnLoopThread()
        readSide = .ended
        switch state {
        case .awaitingHello, .ready:
            if error.isEOF {
                // Orderly half-close: answer what the peer sent (pipelined
                // commands may still be committing), then close.
                closeIfPeerDone()
            } else if let failure = stream.tlsFailure {
                // A handshake whose first byte was `P` or CR was a PROXY header.
                if !context.router.logUntrustedProxyHeader(self, firstByte: stream.tls?.firstByte) {
                    context.logger.info("TLS connection failed", metadata: [
                        "conn.id": "\(id)", "peer": "\(peerHost ?? "?")", "error": "\(failure)"])
                }
                destroy(reason: .tlsFailed)
            } else {
                destroy(reason: error.isTimedOut ? .timedOut : .readError)
            }
        case .closing(let reason, _):
            // We said bye and were waiting for the peer to finish.
            if stream.isDrained { destroy(reason: reason) }
        case .closed:
            break
        }
    }
}
