import OutaTimeProtocol
import UV

/// Connection attempts and the socket: resolve, connect, read, write, drop.
extension OutaTimeConnection {
    /// Starts one attempt: the connect timeout covers resolve, TCP connect
    /// and `hello`.
    func startAttempt() {
        guard let handles else { return }
        attemptID += 1
        let id = attemptID
        setState(.connecting)
        handles.phase.start(timeoutMs: options.connectTimeoutMs) { [self] in
            guard attemptID == id else { return }
            drop(.connectTimeout)
        }
        Resolver.resolve(host: options.host, port: options.port, on: loop) { [self] result in
            guard attemptID == id else { return }
            switch result {
            case .success(let addresses): connect(to: addresses[...], attempt: id, lastError: nil)
            case .failure(let error): drop(.resolveFailed(error))
            }
        }
    }

    /// Tries `addresses` in turn until one accepts.
    private func connect(to addresses: ArraySlice<SocketAddress>, attempt id: Int, lastError: UVError?) {
        guard let address = addresses.first else {
            // The resolver never succeeds with an empty list, so there was an error.
            drop(lastError.map(DisconnectReason.connectFailed) ?? .resolveFailed(.eof))
            return
        }
        let stream = TCPStream(loop: loop)
        let link = Link(stream: .tcp(stream), now: loop.now)
        self.link = link
        stream.connect(to: address) { [self] error in
            guard attemptID == id, self.link === link else { return }
            if let error {
                self.link = nil
                stream.close()
                connect(to: addresses.dropFirst(), attempt: id, lastError: error)
                return
            }
            linkConnected(link)
        }
    }

    /// The TCP connection is up: start TLS if asked, start reading and say
    /// `hello` (over TLS it leaves once the handshake is done).
    private func linkConnected(_ link: Link) {
        link.stream.setNoDelay()
        // The kernel's own check of the path (keepalive, user timeout): it
        // fails the socket when the server stops acknowledging.
        link.stream.tcp.setLiveness(options.tcpLiveness)
        if let tls = options.tls {
            do {
                let context = try TLSContext.client(caFile: tls.caFile, certificateFile: tls.certificateFile,
                                                    privateKeyFile: tls.privateKeyFile)
                link.stream = .tls(try TLSStream(connecting: link.stream.tcp, context: context, host: options.host))
            } catch {
                drop(.tlsFailed(error.message))
                return
            }
        }
        let stream = link.stream
        stream.onWriteError = { [self] error in
            guard self.link === link else { return }
            drop(.ioError(error))
        }
        do {
            try stream.startReading(
                onData: { [self] bytes in received(bytes, on: link) },
                onEnd: { [self] error in
                    guard self.link === link else { return }
                    if let failure = stream.tlsFailure {
                        drop(.tlsFailed("TLS with \(options.host):\(options.port) failed: \(failure.message)"))
                    } else {
                        drop(error.isEOF ? .endOfStream : .ioError(error))
                    }
                }
            )
        } catch {
            drop(.ioError(error))
            return
        }
        let pending = PendingRequest(deadline: nil) { [self] result in
            guard self.link === link else { return }
            helloAnswered(result, on: link)
        }
        var fields = options.helloFields
        if let resumeKey { fields["resume"] = .string(resumeKey) }
        link.helloSentAt = loop.now
        transmit(type: "hello", fields: fields, pending: pending, on: link)
    }

    private func helloAnswered(_ result: Result<JSONValue, ClientError>, on link: Link) {
        let reply: HelloResult
        switch result {
        case .success(let json):
            do {
                reply = try json.decode(HelloResult.self)
            } catch {
                drop(.protocolViolation("the hello result is not what protocol 1 says: \(error)"))
                return
            }
            guard reply.protocol == 1 else {
                drop(.protocolViolation("the server answered hello with protocol \(reply.protocol); this client speaks protocol 1"))
                return
            }
        case .failure(.server(let error)):
            drop(.helloRefused(error))
            return
        case .failure:
            return  // the link is already gone; drop() has run
        }
        link.isReady = true
        link.maxFrame = reply.maxFrame
        link.heartbeatMs = UInt64(max(reply.heartbeatMs, 1))
        hello = reply
        resumeKey = reply.resumeKey
        link.readyAt = loop.now
        sampleRTT(loop.now &- link.helloSentAt)
        stats.connects += 1
        handles?.phase.stop()
        startHeartbeat(link)
        // Subscriptions first, then what waited, then what the state
        // callback sends: the order the caller asked for them.
        restoreSubscriptions()
        sendBacklog()
        guard self.link === link else { return }  // a completion closed it
        setState(.ready)
    }

    /// Bytes from the server: frames are decoded and dispatched in order,
    /// until one of them drops the link.
    private func received(_ bytes: UnsafeRawBufferPointer, on link: Link) {
        guard self.link === link else { return }
        // The silence limit is a progress timeout, not a whole-frame
        // deadline: a 600 KB snapshot on a 1 Mbit link takes 5 s (issue 27).
        link.bytesSinceInbound += bytes.count
        if link.bytesSinceInbound >= Self.progressBytes {
            link.bytesSinceInbound = 0
            link.lastInboundAt = loop.now
        }
        if link.frameBytesSince == nil { link.frameBytesSince = loop.now }
        do {
            try link.decoder.feed(bytes) { body in
                guard self.link === link else { return }
                link.lastInboundAt = loop.now
                lastFrameAtMs = loop.now
                lastFrameTransferMs = loop.now &- min(link.frameBytesSince ?? loop.now, loop.now)
                link.frameBytesSince = loop.now  // a next frame in these bytes
                link.bytesSinceInbound = 0
                let frame: IncomingFrame
                do {
                    frame = try IncomingFrame.decode(body, with: decoder)
                } catch {
                    drop(.protocolViolation("a frame of \(body.count) bytes is not a JSON object with a string 'type'"))
                    return
                }
                dispatch(frame, on: link)
            }
        } catch {
            guard self.link === link else { return }
            drop(.protocolViolation("bad frame header: \(error)"))
        }
        if self.link === link, link.decoder.bufferedByteCount == 0 { link.frameBytesSince = nil }
        // Any bytes answer a liveness probe, a frame still arriving too.
        link.lastBytesAt = loop.now
    }

    /// Encodes and queues one request on `link`; the reply goes to `pending`.
    func transmit(type: String, fields: [String: JSONValue], pending: PendingRequest, on link: Link) {
        let id = nextRequestID
        nextRequestID += 1
        let request = Request(type: type, id: .int(id), fields: fields)
        let frame: Frame
        do {
            frame = try encoder.frame(JSONValue.object(request.fields))
        } catch {
            pending.completion(.failure(.invalidRequest("not representable as JSON: \(error)")))
            return
        }
        let bodyCount = frame.count - Frame.headerSize
        guard bodyCount <= link.maxFrame else {
            pending.completion(.failure(.invalidRequest("\(bodyCount) bytes exceed the server's max_frame of \(link.maxFrame)")))
            return
        }
        inFlight[id] = pending
        stats.requestsSent += 1
        link.stream.enqueue(FrameChunk(frame))
        scheduleFlush()
    }

    /// Flushes the socket once, at the end of this loop iteration: many
    /// requests made in one callback leave in one write.
    private func scheduleFlush() {
        guard !flushScheduled, let handles else { return }
        flushScheduled = true
        handles.flush.start { [self] in
            flushScheduled = false
            self.handles?.flush.stop()
            link?.stream.flush()
        }
    }

    /// Ends the current attempt or connection with `reason`: requests in
    /// flight fail with ``ClientError/disconnected``; then either a
    /// reconnect is scheduled or, when that cannot help, the connection
    /// closes for good.
    func drop(_ reason: DisconnectReason) {
        attemptID += 1
        // The backoff starts again only after a connection that lasted: one
        // that fails right after its hello (a server that breaks the
        // protocol, or declares itself dead) must not be retried at once,
        // again and again.
        if let readyAt = link?.readyAt, loop.now &- readyAt >= Self.stableAfterMs { attempt = 0 }
        if let link {
            self.link = nil
            link.stream.close()
        }
        hello = nil
        lastDisconnect = reason
        stats.disconnects += 1
        handles?.heartbeat.stop()
        handles?.phase.stop()
        flushScheduled = false
        handles?.flush.stop()
        for channel in mirrors.keys { _ = mirrors[channel]?.endSync() }
        let lost = inFlight.sorted { $0.key < $1.key }.map(\.value.completion)  // in the order sent
        inFlight = [:]
        for completion in lost { completion(.failure(.disconnected)) }
        guard handles != nil, link == nil else { return }  // a completion closed or reconnected
        guard options.reconnect, reason.isRetryable else {
            finish(reason)
            return
        }
        scheduleReconnect()
    }

    private func scheduleReconnect() {
        guard let handles else { return }
        attempt += 1
        stats.reconnectAttempts += 1
        let delay = options.backoff.delayMs(attempt: attempt, unit: randomUnit())
        setState(.reconnecting(attempt: attempt, delayMs: delay))
        guard case .reconnecting = state else { return }
        handles.phase.start(timeoutMs: delay) { [self] in startAttempt() }
    }
}

/// A ``Frame`` as a chunk of the stream's write queue. The server module
/// makes `Frame` itself a `ByteChunk`; a second conformance here would
/// clash wherever both modules are linked, so the client wraps it.
final class FrameChunk: ByteChunk {
    let frame: Frame
    init(_ frame: Frame) { self.frame = frame }
    var bytes: UnsafeRawBufferPointer { frame.bytes }
}
