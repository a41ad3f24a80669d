/// The timing rules of slot ownership (design §4.3).
public struct OwnershipPolicy: Sendable, Equatable {
    /// How long each node in a slot's HRW order waits for the ones before
    /// it: the k-th live node claims a free or orphaned slot `k × claimStagger`
    /// after it became claimable (1 s in the design). Zero makes every node
    /// race for every such slot (the revision check still picks one).
    public var claimStagger: Duration = .seconds(1)
    /// No claim of a free slot before this long after start, so that nodes
    /// started together see each other's heartbeats first.
    public var startupGrace: Duration = .milliseconds(500)
    /// When set, a slot whose HRW winner is another node alive without a
    /// break for this long is handed over to it (a joining node gets its
    /// share); nil keeps every slot where it is while its owner lives.
    public var rebalanceAfter: Duration? = .seconds(3)
    /// A node that left gracefully (deleted its heartbeat) hands its slots
    /// over itself; others claim what it left only after this long, so they
    /// do not race its handovers.
    public var handoverWait: Duration = .seconds(1)

    /// The design's defaults.
    public init() {}
}

/// A revision-checked write to one slot key that a plan asks for.
public struct SlotWrite: Sendable, Equatable {
    /// Why the write is made.
    public enum Reason: Sendable, Equatable {
        /// This node takes a free or orphaned slot (or its own again, after a fence).
        case claim
        /// This node gives its slot to `record.node` (nil: releases it).
        case handover
    }

    /// The slot.
    public var slot: Int
    /// The revision the key must still have; 0: the key must be absent (a create).
    public var expectedRevision: UInt64
    /// The value to store.
    public var record: SlotRecord
    /// Claim or handover.
    public var reason: Reason
}

/// The decision function: which slot writes a node should make now, given
/// the table, the live set and the time. Pure: the shell performs the
/// writes, and the revision check settles races between nodes.
public struct OwnershipPlanner: Sendable {
    /// This node's id.
    public let node: String
    /// The timing rules.
    public let policy: OwnershipPolicy

    /// A planner for `node`.
    public init(node: String, policy: OwnershipPolicy) {
        self.node = node
        self.policy = policy
    }

    /// The claims (and rebalancing handovers) to make at `now`.
    ///
    /// - `owned`: the slots this node holds by a write it made since its
    ///   last fence. A slot the table gives to this node but not in `owned`
    ///   (a restart, or the end of a fence) is claimed again with epoch + 1.
    /// - `startedAt`: when this node started (``OwnershipPolicy/startupGrace``).
    /// Call it only while this node is not fenced.
    public func writes(table: SlotTable, view: MembershipView, owned: Set<Int>, startedAt: ContinuousClock.Instant, now: ContinuousClock.Instant) -> [SlotWrite] {
        let live = Set(view.liveNodes(at: now)).union([node])
        let settled = now >= startedAt + policy.startupGrace
        var writes: [SlotWrite] = []
        for slot in 0..<SlotMap.count {
            let entry = table[slot]
            let claim = SlotWrite(slot: slot, expectedRevision: entry.revision,
                                  record: SlotRecord(node: node, epoch: entry.nextEpoch), reason: .claim)
            if entry.holder == node {
                if !owned.contains(slot) { writes.append(claim) }
                else if let handover = rebalance(slot, entry, live: live, view: view, settled: settled, now: now) { writes.append(handover) }
                continue
            }
            let claimableSince: ContinuousClock.Instant
            if let holder = entry.holder {
                // Silence is proof of death only if this node's watch was
                // working past it: its own heartbeat came back after the
                // holder's death time. A stalled watch shows silence everywhere.
                guard !view.isAlive(holder, at: now), let echo = view.heartbeats[node]?.changedAt,
                      echo >= view.deathTime(of: holder) else { continue }
                let wait = view.leftGracefully(holder) ? policy.handoverWait : .zero
                claimableSince = max(entry.since, view.deathTime(of: holder) + wait)
            } else {
                guard settled else { continue }
                claimableSince = entry.since
            }
            let rank = Rendezvous.ranking(slot: slot, among: live).firstIndex(of: node) ?? 0
            if now >= claimableSince + policy.claimStagger * rank { writes.append(claim) }
        }
        return writes
    }

    /// The handover of an owned slot to its HRW winner, when rebalancing is
    /// on and the winner has been alive long enough.
    private func rebalance(_ slot: Int, _ entry: SlotEntry, live: Set<String>, view: MembershipView, settled: Bool, now: ContinuousClock.Instant) -> SlotWrite? {
        guard settled, let after = policy.rebalanceAfter,
              let winner = Rendezvous.ranking(slot: slot, among: live).first, winner != node,
              let since = view.aliveSince(winner, at: now), now >= since + after else { return nil }
        return SlotWrite(slot: slot, expectedRevision: entry.revision,
                         record: SlotRecord(node: winner, epoch: entry.nextEpoch), reason: .handover)
    }

    /// The writes of a graceful stop: each owned slot goes to its HRW winner
    /// among the other live nodes (epoch + 1), or is released (same epoch)
    /// when no other node is alive. Revision-checked, so a slot already
    /// taken by another node is left alone.
    public func handovers(table: SlotTable, view: MembershipView, owned: Set<Int>, now: ContinuousClock.Instant) -> [SlotWrite] {
        let others = view.liveNodes(at: now).filter { $0 != node }
        return owned.sorted().compactMap { slot in
            let entry = table[slot]
            guard entry.holder == node, let epoch = entry.record?.epoch else { return nil }
            let record = if let successor = Rendezvous.ranking(slot: slot, among: others).first {
                SlotRecord(node: successor, epoch: epoch + 1)
            } else {
                SlotRecord(node: nil, epoch: epoch)
            }
            return SlotWrite(slot: slot, expectedRevision: entry.revision, record: record, reason: .handover)
        }
    }
}
