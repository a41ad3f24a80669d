import OutaTimeProtocol
import UV

/// How a connection ends: politely (``close(bye:)``: `bye`, flush, FIN,
/// wait for the peer's close) or at once (``destroy(reason:)``).
extension Connection {
    /// Applies the connection's deadlines at `now` (the server's sweep asks
    /// every connection periodically): `hello` within the hello timeout
    /// (unless `helloAnsweredLater`: a throttled `hello` is answered at its
    /// time, at most the cap), a frame within the idle timeout while ready
    /// and nothing is unanswered (the heartbeat), the peer's close within
    /// the linger time once closing.
    func checkDeadlines(now: UInt64, helloAnsweredLater: Bool) {
        switch state {
        case .awaitingHello where now - connectedAt >= context.limits.helloTimeoutMs && !helloAnsweredLater:
            close(bye: .helloTimeout)
        case .ready where now - lastActivity >= context.limits.idleTimeoutMs && !requests.isBusy:
            close(bye: .idleTimeout)
        case .closing(_, let deadline) where now >= deadline:
            destroy(reason: .lingerExpired)
        default:
            break
        }
    }

    /// Ends the conversation politely: `bye` with `reason`, flush, FIN, then
    /// close once the peer has closed too (or the linger time has passed), so
    /// the peer reliably reads the `bye` instead of a reset.
    func close(bye reason: ByeReason) {
        guard state.isOpen else { return }
        if stream.isHandshaking {
            // No bye can reach a peer that has not finished the handshake.
            context.logger.debug("closing connection before its TLS handshake completed",
                                 metadata: ["conn.id": "\(id)", "reason": "\(reason.rawValue)"])
            destroy(reason: .tlsUnfinished)
            return
        }
        if reason == .slowConsumer {
            context.counters.slowConsumerCloses += 1
            // The reason must reach the peer: the frames queued behind
            // what is already with the kernel (or libuv) are dropped, and
            // the `bye` goes alone right behind that (protocol §12). Other
            // closes keep their queue: a shutdown flushes the replies of
            // committed work first (§13).
            stream.dropUnsent()
        }
        context.logger.debug("closing connection", metadata: ["conn.id": "\(id)", "reason": "\(reason.rawValue)"])
        beginClosing(reason: .bye, bye: reason)
    }

    /// Stops taking requests, queues the `bye` (when there is one) and, on
    /// WebSocket, the Close frame, flushes the output, then shuts down the
    /// write side and waits for the peer's EOF (at most ``ConnectionLimits/lingerMs``).
    func beginClosing(reason: CloseReason, bye: ByeReason? = nil) {
        guard state.isOpen else { return }
        transition(to: .closing(reason: reason, deadline: context.time.now + UInt64(context.limits.lingerMs)))
        if let bye { sendFinal(ByePush(reason: bye)) }
        // On WebSocket the conversation ends with a Close frame (after the
        // `bye` when there is one; its reason is the bye reason).
        sendWebSocketClose(bye: bye)
        context.counters.closesByReason[bye?.rawValue ?? reason.rawValue, default: 0] += 1
        requests.clear()
        dropHeld()
        context.router.connectionEnding(self)
        if readSide != .ended {
            readSide = .reading
            try? stream.resumeReading()  // to notice the peer's EOF
        }
        let stream = stream
        let finish = { [self] in  // cleared on drain or close: no lasting cycle
            stream.onDrained = nil
            // The connection may be destroyed (linger expired, peer reset)
            // before the shutdown completes: hold it until then.
            stream.shutdown { [self] _ in
                if case .ended = self.readSide, case .closing = self.state { self.destroy(reason: reason) }
            }
        }
        if stream.isDrained {
            finish()
        } else {
            stream.onDrained = finish
            context.markDirty(self)
        }
    }

    /// Closes the socket now; the router forgets the connection.
    func destroy(reason: CloseReason) {
        switch state {
        case .closed: return
        case .closing: break
        case .awaitingHello, .ready: context.counters.closesByReason[reason.rawValue, default: 0] += 1
        }
        transition(to: .closed)
        context.router.connectionEnding(self)
        requests.clear()
        stream.close()
        context.logger.trace("connection closed", metadata: ["conn.id": "\(id)", "reason": "\(reason.rawValue)"])
        context.router.connectionClosed(self)
    }
}
