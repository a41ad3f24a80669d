import Foundation
import OutaTimeProtocol

/// Relaying a channel owned elsewhere (docs/CLUSTER.md §4.4): the owner
/// publishes each push's bytes once; this node frames them once and queues
/// the same frame to each of its subscribers. Events keep their seq order:
/// a repeat is dropped, a gap is filled from the store before anything after it.
extension Server {
    /// A push of a followed channel arrived.
    func relayed(_ push: ClusterPush, _ cluster: ClusterNode) {
        guard let relay = cluster.relays[push.channel], channels[push.channel] == nil else { return }
        cluster.counters.relayedPushes += 1
        let frame = Frame(body: push.body)
        if let seq = push.seq {
            guard relay.seq != nil else {
                if relay.pending.count < RelayedChannel.pendingLimit { relay.pending.append((seq, frame)) }
                return
            }
            relayEvent(relay, seq: seq, frame: frame)
            return
        }
        guard let subscribers = subscriptions.subscribers(of: push.channel) else { return }
        let isTick = push.body.starts(with: Self.tickPrefix)
        var delivered = 0
        if push.except == nil, !isTick, push.body.starts(with: Self.messagePrefix) {
            // Messages, per local subscriber: opt-outs and drop counts (§6.3, §12).
            delivered = queueMessage(frame, to: subscribers, channel: push.channel)
        } else {
            for session in subscribers.members where session.state.isReady && session.id != push.except {
                if isTick ? session.queueTick(frame, channel: push.channel) : session.queue(frame, limit: config.outputLimitBytes) {
                    delivered += 1
                }
            }
        }
        counters.deliveries += delivered
        counters.framesOut += delivered
        counters.bytesOut += delivered * frame.count
    }

    /// How the encoder begins a tick push (``TickPush``): ticks are conflated, other pushes are not.
    static let tickPrefix = Array(#"{"type":"tick""#.utf8)
    /// How the encoder begins a `message` push (``MessagePush``).
    static let messagePrefix = Array(#"{"type":"message""#.utf8)

    /// An event push of a relayed channel: delivered in seq order, once.
    func relayEvent(_ relay: RelayedChannel, seq: Int64, frame: Frame) {
        guard let cluster, let last = relay.seq else { return }
        if seq != last + 1 || relay.filling {
            logger.debug("cluster: relayed event out of turn", metadata: ["channel": "\(relay.key)", "seq": "\(seq)", "relayed": "\(last)",
                                                                          "filling": "\(relay.filling)"])
        }
        if seq <= last {
            cluster.counters.relayDuplicates += 1
            return
        }
        if seq > last + 1 || relay.filling {
            if relay.pending.count < RelayedChannel.pendingLimit { relay.pending.append((seq, frame)) }
            fillGap(relay, through: seq - 1)
            return
        }
        deliverEvent(relay, seq: seq, frame: frame)
    }

    private func deliverEvent(_ relay: RelayedChannel, seq: Int64, frame: Frame) {
        relay.seq = seq
        relay.recent.append((seq, frame))
        if relay.recent.count > RelayedChannel.recentLimit { relay.recent.removeFirst() }
        if let subscribers = subscriptions.subscribers(of: relay.key) {
            var delivered = 0
            for session in subscribers.members where session.state.isReady {
                if session.queue(frame, limit: config.outputLimitBytes) { delivered += 1 }
            }
            counters.deliveries += delivered
            counters.framesOut += delivered
            counters.bytesOut += delivered * frame.count
        }
        runHeld(relay)
    }

    /// Runs the work that waited for the relay to reach its seq.
    private func runHeld(_ relay: RelayedChannel) {
        guard !relay.held.isEmpty, let seq = relay.seq else { return }
        let due = relay.held.filter { $0.seq <= seq }
        guard !due.isEmpty else { return }
        relay.held.removeAll { $0.seq <= seq }
        for work in due { work.run() }
    }

    /// Reads the events after the relay's seq through `through` from the
    /// store, delivers them, then what waited behind the gap.
    func fillGap(_ relay: RelayedChannel, through: Int64) {
        guard !relay.filling, let cluster, let from = relay.seq, through > from else { return }
        relay.filling = true
        cluster.counters.relayGapFills += 1
        readHistory(channel: relay.key, after: from, through: through, limit: Int(min(through - from, 10_000))) { [unowned self] result in
            relay.filling = false
            guard self.cluster?.relays[relay.key] === relay else { return }
            if case .success(let events) = result {
                for event in events where event.seq == (relay.seq ?? 0) + 1 {
                    guard let frame = self.eventFrame(relay.key, seq: event.seq, event: event.event, data: event.data,
                                                      at: event.at) else { continue }
                    self.deliverEvent(relay, seq: event.seq, frame: frame)
                }
            } else {
                self.logger.warning("filling a relay gap failed", metadata: ["channel": "\(relay.key)"])
            }
            let pending = relay.pending.sorted { $0.seq < $1.seq }
            relay.pending = []
            for event in pending { self.relayEvent(relay, seq: event.seq, frame: event.frame) }
        }
    }

    /// The events of a batch committed after its channel was let go: into
    /// the channel's relay, if this node's connections still watch it.
    /// True when the relay is behind (a gap being filled): the batch's
    /// replies then wait until their events are relayed, and are sent here.
    func relayOrphanBatch(_ batch: CommitPipeline.Batch, of channel: Channel, _ cluster: ClusterNode) -> Bool {
        guard let relay = cluster.relays[channel.key] else { return false }
        defer {
            if (relay.seq ?? 0) < batch.lastSeq, !batch.replies.isEmpty {
                let replies = batch.replies
                hold(relay, until: batch.lastSeq) { [unowned self] in for reply in replies { reply.send(on: self) } }
            }
        }
        for (offset, event) in batch.events.enumerated() {
            let seq = batch.firstSeq + Int64(offset)
            guard let frame = eventFrame(channel.key, seq: seq, event: event.name, data: event.json, at: batch.times[offset]) else { continue }
            relayEvent(relay, seq: seq, frame: frame)
        }
        return (relay.seq ?? 0) < batch.lastSeq && !batch.replies.isEmpty
    }

    /// From the sweep: work held for an event that has not come within
    /// half a second reads the gap from the store (the push was lost, or
    /// the owner changed).
    func sweepRelays(now: UInt64) {
        guard let cluster else { return }
        cluster.absent = cluster.absent.filter { now < $0.value + 1000 }
        if !cluster.slotsToLoad.isEmpty {
            let slots = cluster.slotsToLoad.intersection(cluster.ownership?.owned ?? [])
            cluster.slotsToLoad = []
            if !slots.isEmpty { take(slots: slots, cluster) }
        }
        for relay in cluster.relays.values {
            if let due = relay.rejoinAt, now >= due {
                relay.rejoinAt = nil
                if let owner = cluster.owner(of: relay.key), owner != config.node { relay.owner = owner }
                if !relay.owner.isEmpty { rejoin(relay, cluster) }
            }
        }
        for relay in cluster.relays.values where !relay.held.isEmpty && !relay.filling {
            guard let oldest = relay.held.map(\.since).min(), now >= oldest + 500,
                  let wanted = relay.held.map(\.seq).max() else { continue }
            fillGap(relay, through: wanted)
        }
    }
}
