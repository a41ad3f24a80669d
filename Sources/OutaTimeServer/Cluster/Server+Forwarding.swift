import Foundation
import OutaTimeProtocol
import UV

/// The forwarding side of cluster mode (docs/CLUSTER.md §4.4): a request
/// naming a channel owned elsewhere goes to its owner, and its answer takes
/// the request's place in the connection's order, after the events it
/// waited for.
extension Server {
    /// Routes a channel request of `session` to the channel's owner when
    /// that is another node: nil when this node serves it. Throws
    /// `unavailable` when no owner can be reached.
    func routeToOwner(_ operation: ForwardedRequest.Operation, _ request: Request, on session: Connection,
                      _ cluster: ClusterNode) throws(ProtocolError) -> Handled? {
        let name = try scopedChannel(request, for: session)
        let key = name.description
        if channels[key] != nil || cluster.owns(key) {
            guard cluster.fabric.mayOwn else { throw noOwner(key) }
            return nil
        }
        guard let owner = cluster.owner(of: key), owner != config.node,
              cluster.ownership?.liveNodes.contains(owner) ?? false else { throw noOwner(key) }
        switch operation {
        case .subscribe:
            // Kept on this node, where the relayed messages are delivered per subscriber.
            let messages = try request.optionalBool("messages") ?? true
            if !subscriptions.isSubscribed(session, to: key), session.subscribed.count >= config.maxSubscriptionsPerSession {
                throw ProtocolError(.tooManySubscriptions,
                    "cannot subscribe to '\(key)': this connection already has \(config.maxSubscriptionsPerSession) subscriptions (the limit); unsubscribe from one first")
            }
            let relay = cluster.relays[key] ?? {
                let relay = RelayedChannel(key: key, owner: owner)
                cluster.relays[key] = relay
                // Followed before the request leaves: no push after the owner's reply is missed.
                cluster.fabric.follow(key)
                return relay
            }()
            relay.owner = owner
            subscriptions.setMessages(messages, for: session, on: key)
        case .unsubscribe:
            guard subscriptions.remove(session, from: key) else {
                throw ProtocolError(.notSubscribed, "this connection is not subscribed to '\(key)'")
            }
            endRelayIfUnused(key, cluster)
        default:
            break
        }
        let header = ForwardedRequest(op: operation, session: session.id, name: session.displayName, role: session.role)
        send(ForwardWait(session: session, slot: session.reserveReply(), id: request.id, op: operation, channel: key,
                         owner: owner, payload: header.encoded(with: .object(request.fields)), since: time.now), cluster)
        return .pending
    }

    private func send(_ wait: ForwardWait, _ cluster: ClusterNode) {
        cluster.nextTicket += 1
        cluster.forwards[cluster.nextTicket] = wait
        cluster.counters.forwarded += 1
        let left = Int(config.clusterForwardTimeoutMs) - Int(time.now - wait.since)
        cluster.fabric.send(wait.payload, to: wait.owner, ticket: cluster.nextTicket, timeoutMs: max(100, left))
    }

    /// How long a forward refused before it was applied waits before it is sent again.
    static let forwardRetryMs: UInt64 = 200

    /// Keeps a forward that was not applied (the owner had let the channel
    /// go, or no process served it: it died) for another try once the
    /// slot table has moved on; false when its time is up.
    private func retryLater(_ wait: ForwardWait, _ cluster: ClusterNode) -> Bool {
        guard time.now + Self.forwardRetryMs < wait.since + UInt64(config.clusterForwardTimeoutMs) else { return false }
        cluster.retries.append(wait)
        if cluster.retryTimer == nil { cluster.retryTimer = UV.Timer(loop: loop) }
        cluster.retryTimer?.start(timeoutMs: Self.forwardRetryMs) { [unowned self] in self.sendRetries() }
        return true
    }

    /// Sends the kept forwards again, each to its channel's owner now.
    private func sendRetries() {
        guard let cluster else { return }
        let due = cluster.retries
        cluster.retries = []
        for var wait in due {
            guard wait.session.state.isOpen else {
                if wait.op == .subscribe { endRelayIfUnused(wait.channel, cluster) }
                continue
            }
            let owner = cluster.owner(of: wait.channel)
            guard let owner, owner != config.node, cluster.ownership?.liveNodes.contains(owner) ?? false else {
                if owner == config.node || !retryLater(wait, cluster) {
                    // Ours now, or still no owner at the deadline: the client retries.
                    if wait.op == .subscribe { endRelayIfUnused(wait.channel, cluster) }
                    wait.session.fill(wait.slot, id: wait.id, failure: ProtocolError(.unavailable,
                        "channel '\(wait.channel)' moved between nodes while this request was on its way; nothing was changed: retry"))
                }
                continue
            }
            wait.owner = owner
            if wait.op == .subscribe, let relay = cluster.relays[wait.channel] { relay.owner = owner }
            send(wait, cluster)
        }
    }

    /// An owner answered (or a forward failed).
    func forwardAnswered(_ ticket: UInt64, _ result: Result<[UInt8], ClusterFabricFailure>, _ cluster: ClusterNode) {
        guard let wait = cluster.forwards.removeValue(forKey: ticket) else {
            // A rejoin's answer: its recovered events fill the relay; a
            // refusal (the new owner has not taken the channel yet) or no
            // answer sends the rejoins again shortly.
            guard let key = cluster.rejoins.removeValue(forKey: ticket) else { return }
            logger.debug("cluster: rejoin answered", metadata: ["channel": "\(key)", "result": "\((try? result.get()).map { String(decoding: $0.prefix(80), as: UTF8.self) } ?? "failed")"])
            if case .success(let payload) = result, rejoined(payload, cluster) { return }
            if let relay = cluster.relays[key], relay.rejoinAt == nil { relay.rejoinAt = time.now + Self.rejoinRetryMs }
            return
        }
        let session = wait.session
        let answer: (ForwardedAnswer, ArraySlice<UInt8>)
        switch result {
        case .failure(.unreachable) where retryLater(wait, cluster):
            return
        case .failure(let failure):
            cluster.counters.forwardFailures += 1
            if wait.op == .subscribe { endRelayIfUnused(wait.channel, cluster) }
            let outcome = if case .unreachable = failure {
                "the request was not delivered, so nothing was changed: retry in a few seconds"
            } else {
                "the request was sent, so its outcome is unknown: read the channel before retrying a change"
            }
            session.fill(wait.slot, id: wait.id, failure: ProtocolError(.unavailable,
                "the owner of channel '\(wait.channel)' (node '\(wait.owner)') could not answer: \(failure); \(outcome)"))
            return
        case .success(let payload):
            guard let decoded = ForwardedAnswer.decode(payload) else {
                session.fill(wait.slot, id: wait.id, failure: ProtocolError(.internal,
                    "node '\(wait.owner)' answered a forwarded request with bytes this node cannot read"))
                return
            }
            answer = decoded
        }
        let (header, body) = answer
        if header.moved == true {
            if retryLater(wait, cluster) { return }
            if wait.op == .subscribe { endRelayIfUnused(wait.channel, cluster) }
            session.fill(wait.slot, id: wait.id, failure: ProtocolError(.unavailable,
                "channel '\(wait.channel)' is moving to another node; nothing was changed: retry"))
            return
        }
        guard session.state.isOpen else {
            if wait.op == .subscribe, header.joined == true { sendLeave(session: session, channels: [wait.channel], to: wait.owner, cluster) }
            return
        }
        let frame = body.isEmpty ? nil : Frame(body: body)
        if header.push == true {
            if let frame { session.send(frame) }
            session.fill(wait.slot, frame: nil)
            return
        }
        switch wait.op {
        case .subscribe where header.joined == true:
            joined(session, wait, at: header.seq ?? 0, reply: frame, cluster)
        case .subscribe:
            endRelayIfUnused(wait.channel, cluster)
            if !subscriptions.isSubscribed(session, to: wait.channel) {
                subscriptions.setMessages(true, for: session, on: wait.channel)  // refused: forget the opt-out
            }
            session.fill(wait.slot, frame: frame)
        case .command:
            // The issuer sees its event before its reply, as on one node.
            if let seq = header.seq, subscriptions.isSubscribed(session, to: wait.channel),
               let relay = cluster.relays[wait.channel], (relay.seq ?? 0) < seq {
                hold(relay, until: seq) { session.fill(wait.slot, frame: frame) }
            } else {
                session.fill(wait.slot, frame: frame)
            }
        default:
            session.fill(wait.slot, frame: frame)
        }
    }

    /// The owner took `session` as a watcher, as of `seq`: its reply goes
    /// out, and from then on the relayed pushes.
    private func joined(_ session: Connection, _ wait: ForwardWait, at seq: Int64, reply: Frame?, _ cluster: ClusterNode) {
        let key = wait.channel
        guard let relay = cluster.relays[key] else {
            // The channel became this node's meanwhile: serve it locally.
            _ = subscriptions.add(session, to: key)
            session.fill(wait.slot, frame: reply)
            return
        }
        if relay.seq == nil {
            relay.seq = seq
            let early = relay.pending.sorted { $0.seq < $1.seq }
            relay.pending = []
            _ = subscriptions.add(session, to: key)
            session.fill(wait.slot, frame: reply)
            for event in early { relayEvent(relay, seq: event.seq, frame: event.frame) }
            return
        }
        let at = relay.seq ?? 0
        if seq > at {
            // Its snapshot is ahead of what was relayed: wait for the events between.
            hold(relay, until: seq) { [unowned self] in
                _ = self.subscriptions.add(session, to: key)
                session.fill(wait.slot, frame: reply)
            }
            return
        }
        _ = subscriptions.add(session, to: key)
        session.fill(wait.slot, frame: reply)
        guard seq < at else { return }
        // Its snapshot is behind: the events relayed since, to it alone.
        let missed = relay.recent.filter { $0.seq > seq }
        if missed.count == Int(at - seq) {
            for event in missed { _ = session.queue(event.frame, limit: config.outputLimitBytes) }
        } else {
            queueStoredEvents(of: key, after: seq, through: at, to: [session])
        }
    }

    /// How long after a refused or unanswered rejoin it is sent again.
    static let rejoinRetryMs: UInt64 = 250

    /// A rejoin's answer: a recovered run fills the relay's gap. False
    /// when the owner refused it.
    private func rejoined(_ payload: [UInt8], _ cluster: ClusterNode) -> Bool {
        guard let (header, body) = ForwardedAnswer.decode(payload), header.joined == true else { return false }
        guard let reply = try? JSONValue.parse(Data(body)), case .object(let fields) = reply,
              case .object(let result)? = fields["result"], case .string(let key)? = result["channel"],
              let relay = cluster.relays[key] else { return true }
        guard case .array(let events)? = result["events"] else {
            // A full state, not a run of events (too many missed): read the gap from the store.
            if case .int(let seq)? = result["seq"], let last = relay.seq, seq > last { fillGap(relay, through: seq) }
            return true
        }
        for case .object(let event) in events {
            guard case .int(let seq)? = event["seq"], case .string(let name)? = event["event"],
                  case .string(let at)? = event["at"], let data = event["data"],
                  let frame = eventFrame(key, seq: seq, event: name, data: data, at: at) else { continue }
            relayEvent(relay, seq: seq, frame: frame)
        }
        return true
    }

    /// Runs `work` once the relay has given its subscribers the event `seq`.
    func hold(_ relay: RelayedChannel, until seq: Int64, _ work: @escaping () -> Void) {
        relay.held.append((seq, time.now, work))
    }

    /// A relay with no local subscriber and nothing in flight ends.
    func endRelayIfUnused(_ key: String, _ cluster: ClusterNode) {
        guard let relay = cluster.relays[key], subscriptions.subscriberCount(of: key) == 0,
              relay.held.isEmpty, !cluster.forwards.values.contains(where: { $0.channel == key && $0.op == .subscribe }) else { return }
        endRelay(relay, cluster)
    }

    /// Tells `owner` that `session` left `channels` (it closed, or its
    /// subscribe was answered after it had gone). Not waited for.
    func sendLeave(session: Connection, channels: [String], to owner: String, _ cluster: ClusterNode) {
        let header = ForwardedRequest(op: .leave, session: session.id, name: session.displayName, role: session.role,
                                      channels: channels)
        cluster.nextTicket += 1
        cluster.fabric.send(header.encoded(with: nil), to: owner, ticket: cluster.nextTicket,
                            timeoutMs: config.clusterForwardTimeoutMs)
    }

    /// A closing session's relayed subscriptions: each owner learns it left.
    func leaveRelayed(_ session: Connection, channels: [String]) {
        guard let cluster else { return }
        var byOwner: [String: [String]] = [:]
        for key in channels {
            guard let relay = cluster.relays[key] else { continue }
            byOwner[relay.owner, default: []].append(key)
        }
        for (owner, keys) in byOwner.sorted(by: { $0.key < $1.key }) {
            sendLeave(session: session, channels: keys, to: owner, cluster)
            for key in keys { endRelayIfUnused(key, cluster) }
        }
    }
}
