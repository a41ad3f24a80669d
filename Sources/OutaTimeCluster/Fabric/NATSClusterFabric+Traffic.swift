import NATS
import OutaTimeServer

/// Forwarded requests and relayed pushes.
extension NATSClusterFabric {
    /// Publishes `payload` to `ot.node.<node>.req` with the reply subject
    /// `ot.reply.<self>.<ticket>` and `OT-From`, and returns. The one answer
    /// comes later, on another thread: the reply's bytes, `timeout` after
    /// `timeoutMs`, or `unreachable` when the link is down, the publish
    /// fails, or the fabric stopped. A reply after the timeout is dropped.
    /// `ticket` must not be used again while its send waits (a second send
    /// with it is answered `unreachable` at once).
    public func send(_ payload: [UInt8], to node: String, ticket: UInt64, timeoutMs: Int) {
        counters.sends.add(1, ordering: .relaxed)
        let deadline = ContinuousClock.now + .milliseconds(max(timeoutMs, 0))
        let admission = pending.withLock { $0.admit(ticket: ticket, node: node, ms: timeoutMs, deadline: deadline) }
        let serial: UInt64
        switch admission {
        case .closed:
            // Stopped: no timer runs any more, and the loop that called has ended.
            deliverAnswer(.init(ticket: ticket, result: .failure(.unreachable(node: node, "the fabric of node '\(self.node)' stopped"))))
            return
        case .duplicate:
            fail(ticket, serial: nil, .unreachable(node: node, "ticket \(ticket) is already waiting for an answer"))
            return
        case .admitted(let admitted, let wake):
            serial = admitted
            if wake { timerWake.signal() }
        }
        guard link.up.load(ordering: .acquiring) else {
            fail(ticket, serial: serial, .unreachable(node: node, "the NATS link is down"))
            return
        }
        do throws(NATSError) {
            try connection.publish(FabricSubjects.request(node), data: payload, headers: fromHeaders,
                                   reply: replyPrefix + String(ticket))
        } catch {
            fail(ticket, serial: serial, .unreachable(node: node, error.description))
        }
    }

    /// Takes the send out (when `serial` is given, only if it still waits)
    /// and has the timer thread deliver `failure`.
    private func fail(_ ticket: UInt64, serial: UInt64?, _ failure: ClusterFabricFailure) {
        let outcome = PendingSends.Outcome(ticket: ticket, result: .failure(failure))
        let queued = pending.withLock { pending -> Bool? in
            if let serial, pending.take(ticket, serial: serial) == nil { return nil }  // answered already
            return pending.queue(outcome)
        }
        switch queued {
        case nil: return
        case true?: timerWake.signal()
        case false?: deliverAnswer(outcome)  // stopped meanwhile: no timer
        }
    }

    /// A message on `ot.reply.<self>.>`: the answer to a waiting send, a
    /// late one (dropped), or NATS' "no responders" notice: nobody serves
    /// the node (it died, or never was), so the request was not delivered
    /// and the send fails at once with `unreachable` rather than wait out
    /// its timeout (a takeover then costs the client one quick retry).
    func received(reply message: NATSMessage) {
        guard let ticket = FabricSubjects.ticket(ofReply: message.subject) else { return }
        if message.data.isEmpty, message.headers[FabricSubjects.statusHeader] != nil {
            counters.noResponders.add(1, ordering: .relaxed)
            if let entry = pending.withLock({ $0.take(ticket) }) {
                deliverAnswer(.init(ticket: ticket, result: .failure(.unreachable(node: entry.node,
                    "no process serves it (NATS: no responders), so the request was not delivered"))))
            }
            return
        }
        guard pending.withLock({ $0.take(ticket) }) != nil else {
            counters.lateReplies.add(1, ordering: .relaxed)
            return
        }
        deliverAnswer(.init(ticket: ticket, result: .success(message.data)))
    }

    /// Publishes the answer to the request's reply subject. A failure is
    /// counted and dropped: the sender times out.
    public func answer(_ request: ClusterRequestID, payload: [UInt8]) {
        do throws(NATSError) {
            try connection.publish(request.reference, data: payload)
        } catch {
            counters.answerFailures.add(1, ordering: .relaxed)
        }
    }

    /// Publishes on `ot.push.<kind>.<name>` with `OT-From`, `OT-Seq` (when
    /// `seq` is given) and `OT-Except` (when `except` is). A name that is
    /// not a channel name, or a closed link, is counted and dropped. This
    /// node receives its own pushes too when it follows the channel
    /// (``ClusterPush/from`` is then ``node``).
    public func publish(channel: String, body: [UInt8], seq: Int64?, except: String?) {
        guard let subject = FabricSubjects.push(channel) else {
            counters.pushFailures.add(1, ordering: .relaxed)
            return
        }
        var headers = fromHeaders
        if let seq { headers[FabricSubjects.seqHeader] = String(seq) }
        if let except { headers[FabricSubjects.exceptHeader] = except }
        do throws(NATSError) {
            try connection.publish(subject, data: body, headers: headers)
            counters.pushesPublished.add(1, ordering: .relaxed)
        } catch {
            counters.pushFailures.add(1, ordering: .relaxed)
        }
    }

    /// Subscribes to the channel's push subject (one subscription per
    /// channel, so its pushes arrive in publish order); idempotent. Before
    /// ``start(deliver:)`` the channel is recorded and subscribed at start.
    /// The server registers the interest asynchronously: pushes published
    /// elsewhere before it arrives are not received (``flush(timeout:)``
    /// waits for it, for tests).
    public func follow(_ channel: String) {
        subscriptions.withLock { state in
            guard state.follows[channel] == nil else { return }
            let active = ActiveFlag()
            var follow = Follow(active: active, subscription: nil)
            if state.live {
                follow.subscription = subscribe(push: channel, active: active)
                guard follow.subscription != nil else { return }  // counted; a later follow tries again
            }
            state.follows[channel] = follow
        }
    }

    /// Ends the channel's subscription; nothing more of it is delivered
    /// once this returns (but a delivery under way on another thread may
    /// finish). Idempotent.
    public func unfollow(_ channel: String) {
        guard let follow = subscriptions.withLock({ $0.follows.removeValue(forKey: channel) }) else { return }
        follow.active.on.store(false, ordering: .releasing)
        try? follow.subscription?.unsubscribe()
    }

    /// The subscription delivering `channel`'s pushes, or nil (counted) when
    /// it could not be made.
    func subscribe(push channel: String, active: ActiveFlag) -> NATSSubscription? {
        guard let subject = FabricSubjects.push(channel) else {
            counters.followFailures.add(1, ordering: .relaxed)
            return nil
        }
        let sink = sink
        let counters = counters
        do throws(NATSError) {
            return try connection.subscribe(subject) { message in
                guard active.on.load(ordering: .acquiring) else { return }
                counters.pushesReceived.add(1, ordering: .relaxed)
                let headers = message.headers
                sink(.push(ClusterPush(channel: channel, body: message.data,
                                       seq: headers[FabricSubjects.seqHeader].flatMap { Int64($0) },
                                       except: headers[FabricSubjects.exceptHeader],
                                       from: headers[FabricSubjects.fromHeader] ?? "")))
            }
        } catch {
            counters.followFailures.add(1, ordering: .relaxed)
            return nil
        }
    }
}
