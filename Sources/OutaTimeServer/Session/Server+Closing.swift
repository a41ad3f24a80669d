import OutaTimeProtocol
import UV

extension Server {
    /// Ends a conversation politely: `bye` with `reason`, flush, FIN, then
    /// close once the peer has closed too (or the linger time has passed), so
    /// the peer reliably reads the `bye` instead of a reset.
    func close(_ session: Session, bye reason: ByeReason) {
        guard session.state.isOpen else { return }
        if session.stream.isHandshaking {
            // No bye can reach a peer that has not finished the handshake.
            logger.debug("closing connection before its TLS handshake completed",
                         metadata: ["conn.id": "\(session.id)", "reason": "\(reason.rawValue)"])
            destroy(session, reason: .tlsUnfinished)
            return
        }
        if reason == .slowConsumer {
            counters.slowConsumerCloses += 1
            // The reason must reach the peer: the frames queued behind
            // what is already with the kernel (or libuv) are dropped, and
            // the `bye` goes alone right behind that (protocol §12). Other
            // closes keep their queue: a shutdown flushes the replies of
            // committed work first (§13).
            session.stream.dropUnsent()
        }
        logger.debug("closing connection", metadata: ["conn.id": "\(session.id)", "reason": "\(reason.rawValue)"])
        session.sendFinal(ByePush(reason: reason))
        beginClosing(session, reason: .bye, bye: reason)
    }

    /// Stops taking requests from `session`, flushes its output, then shuts
    /// down the write side and waits for the peer's EOF.
    func beginClosing(_ session: Session, reason: Session.CloseReason, bye: ByeReason? = nil) {
        guard session.state.isOpen else { return }
        // On WebSocket the conversation ends with a Close frame (after the
        // `bye` when there is one; its reason is the bye reason).
        session.sendWebSocketClose(bye: bye)
        session.transition(to: .closing(reason: reason, deadline: loop.now + UInt64(config.lingerMs)))
        count(close: bye?.rawValue ?? reason.rawValue)
        session.requests.clear()
        session.dropHeld()
        detach(session)
        if !session.sawEOF { try? session.stream.resumeReading() }  // to notice the peer's EOF
        let stream = session.stream
        let finish = { [unowned self, session] in  // cleared on drain or close: no lasting cycle
            stream.onDrained = nil
            // The session may be destroyed (linger expired, peer reset)
            // before the shutdown completes: hold it until then.
            stream.shutdown { [unowned self, session] _ in
                if session.sawEOF, case .closing = session.state { self.destroy(session, reason: reason) }
            }
        }
        if stream.isDrained {
            finish()
        } else {
            stream.onDrained = finish
            markDirty(session)
        }
    }

    /// Closes the socket now and forgets the session.
    func destroy(_ session: Session, reason: Session.CloseReason) {
        switch session.state {
        case .closed: return
        case .closing: break
        case .awaitingHello, .ready: count(close: reason.rawValue)
        }
        session.transition(to: .closed)
        detach(session)
        sessions[session.serial] = nil
        if session.webSocket != nil { counters.webSocketOpen -= 1 }
        channelQuotas.forget(connection: session.serial)
        if let host = session.peerHost { addresses.connectionClosed(from: host) }
        session.requests.clear()
        session.stream.close()
        logger.trace("connection closed", metadata: ["conn.id": "\(session.id)", "reason": "\(reason.rawValue)"])
        if case .draining = phase { checkDrained() }
    }

    /// Removes every subscription of `session` and tells the remaining
    /// watchers it left (also after an abrupt disconnect).
    func detach(_ session: Session) {
        var left = subscriptions.removeAll(of: session)
        if let cluster {
            // Channels owned elsewhere: their owners announce the leave.
            let relayed = left.filter { cluster.relays[$0] != nil }
            if !relayed.isEmpty {
                leaveRelayed(session, channels: relayed)
                left.removeAll { relayed.contains($0) }
            }
        }
        for channel in left {
            broadcastPresence(channel: channel, joined: [], left: [session.watcher], except: nil)
            release(session, from: channel)
        }
    }

    private func count(close reason: String) {
        counters.closesByReason[reason, default: 0] += 1
    }

    /// Periodic checks: hello and idle timeouts, linger expiry, shutdown progress.
    func sweep() {
        assertOnLoopThread()
        let now = loop.now
        let helloTimeout = UInt64(config.helloTimeoutMs)
        for session in Array(sessions.values) {
            switch session.state {
            case .awaitingHello where now - session.connectedAt >= helloTimeout && slowedHellos[session.serial] == nil:
                // (A hello answered late, HelloThrottle, is answered at its time, at most the cap.)
                close(session, bye: .helloTimeout)
            case .ready where now - session.lastActivity >= config.idleTimeoutMs && !session.requests.isBusy:
                close(session, bye: .idleTimeout)
            case .closing(_, let deadline) where now >= deadline:
                destroy(session, reason: .lingerExpired)
            default:
                break
            }
        }
        sweepHTTP(now: now)
        sweepRefusals(now: now)
        sweepProxyHeaderWaits(now: now)
        if case .running = phase { forgetIdleChannels(now: now) }
        throttle.forgetExpired(now: now)
        sweepRelays(now: now)
        if case .draining = phase { checkDrained() }
    }

    /// SIGINT/SIGTERM: stop accepting and reading, let pending commits finish,
    /// then `bye server_shutdown` to everyone, flush and stop.
    func beginShutdown() {
        guard case .running = phase else { return }
        transition(to: .draining(deadline: loop.now + UInt64(config.shutdownTimeoutMs)))
        logger.notice("shutting down", metadata: ["connections": "\(sessions.count)", "pending_writes": "\(pendingWrites.count)"])
        listener?.close()
        tlsListener?.close()
        closeProxyHeaderWaits()
        for session in sessions.values { session.stream.stopReading() }
        recordAlive(force: true)
        checkDrained()
    }

    func checkDrained() {
        guard case .draining(let deadline) = phase else { return }
        loop.updateTime()
        let overdue = loop.now >= deadline
        submitOpenBatches()
        if !pendingWrites.isEmpty && !overdue { return }
        for session in Array(sessions.values) { close(session, bye: .serverShutdown) }
        guard sessions.isEmpty || overdue else { return }
        transition(to: .stopped)
        for session in Array(sessions.values) { destroy(session, reason: .serverStopped) }
        closeOwnHandles()
        logger.notice("stopped")
    }
}
