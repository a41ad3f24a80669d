import NATS

/// One member's whole state and its lifecycle, with no I/O: the shell feeds
/// it watch entries, heartbeat acks and the time, performs the writes it
/// asks for, and reports its snapshots.
///
/// `starting → running ⇄ fenced → rereading → running`, then `stopping`.
/// The lease: a heartbeat put *sent* at t and acknowledged keeps the node
/// unfenced until t + fenceAfter; others take it for dead only deadAfter
/// after they *saw* a revision, which is later than t.
struct MembershipState: Sendable {
    enum Phase: Sendable, Equatable {
        /// Waiting for the first heartbeat ack and both watches.
        case starting
        /// Acting as owner of `owned`.
        case running
        /// The lease lapsed: owns nothing, waits for a heartbeat ack.
        case fenced
        /// The lease is back; waits for the restarted watches to catch up.
        case rereading
        /// A graceful stop or an abandon: no more claims.
        case stopping
    }

    /// What the shell must do after a step.
    enum Step: Sendable, Equatable {
        case none
        /// Restart both watches with ``generation`` (the re-read after a fence).
        case restartWatches
        /// Make these writes, in order.
        case write([SlotWrite])
    }

    enum Bucket: Sendable { case owners, nodes }

    let planner: OwnershipPlanner
    let fenceAfter: Duration
    let deadAfter: Duration
    private(set) var startedAt: ContinuousClock.Instant
    private(set) var phase = Phase.starting
    private(set) var table: SlotTable
    private(set) var view: MembershipView
    /// Slots held by a write of this node since its last fence.
    private(set) var owned: Set<Int> = []
    /// When the last acknowledged heartbeat put was sent.
    private(set) var lastAckSent: ContinuousClock.Instant?
    /// The revision of the last acknowledged heartbeat.
    private var lastAckRevision: UInt64 = 0
    /// When the oldest acknowledged heartbeat the nodes watch has not shown
    /// yet was sent: a watch that stops delivering would make every other
    /// node look dead, so a member whose own beats stop coming back through
    /// its watch for deadAfter re-reads as after a fence.
    private var unechoedSince: ContinuousClock.Instant?
    /// The watches' generation; events of an older one are stale.
    private(set) var generation = 0
    private var caughtUp: (owners: Bool, nodes: Bool) = (false, false)
    /// Per slot, the expected revision of a write the revision check refused:
    /// not tried again until the table moves past it.
    private var refused: [Int: UInt64] = [:]
    private(set) var stats = MembershipStats()

    var node: String { planner.node }

    init(node: String, policy: OwnershipPolicy, deadAfter: Duration, fenceAfter: Duration, now: ContinuousClock.Instant) {
        planner = OwnershipPlanner(node: node, policy: policy)
        self.fenceAfter = fenceAfter
        self.deadAfter = deadAfter
        startedAt = now
        table = SlotTable(now: now)
        view = MembershipView(deadAfter: deadAfter, started: now)
    }

    /// Until when this node may act as an owner, or nil when it may not.
    func leaseValidUntil(at now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        guard phase == .running, let sent = lastAckSent, now < sent + fenceAfter else { return nil }
        return sent + fenceAfter
    }

    mutating func heartbeatAcked(sentAt: ContinuousClock.Instant, revision: UInt64) {
        if lastAckSent.map({ sentAt > $0 }) ?? true { lastAckSent = sentAt }
        lastAckRevision = max(lastAckRevision, revision)
        let echoed = (view.heartbeats[node]?.revision ?? 0) >= revision
        if !echoed && unechoedSince == nil { unechoedSince = sentAt }
    }

    mutating func heartbeatFailed() { stats.heartbeatFailures += 1 }

    /// One watch event, reduced to what the state needs.
    enum Change: Sendable, Equatable {
        /// A value was put at a revision.
        case put(key: String, value: [UInt8], revision: UInt64)
        /// The key was deleted or purged at a revision.
        case removed(key: String, revision: UInt64)
        /// The watch has reported every value present when it started.
        case caughtUp

        init(_ event: KeyValueWatchEvent) {
            switch event {
            case .caughtUp: self = .caughtUp
            case .entry(let entry) where entry.operation == .put:
                self = .put(key: entry.key, value: entry.value, revision: entry.revision)
            case .entry(let entry): self = .removed(key: entry.key, revision: entry.revision)
            }
        }
    }

    mutating func apply(_ change: Change, from bucket: Bucket, generation: Int, at now: ContinuousClock.Instant) {
        guard generation == self.generation else { return }
        switch (change, bucket) {
        case (.caughtUp, .owners): caughtUp.owners = true
        case (.caughtUp, .nodes): caughtUp.nodes = true
        case (.put(let key, let value, let revision), .owners):
            applySlot(key: key, record: SlotRecord(decoding: value), revision: revision, at: now)
        case (.removed(let key, let revision), .owners):
            applySlot(key: key, record: nil, revision: revision, at: now)
        case (.put(let key, _, let revision), .nodes):
            view.observe(node: key, revision: revision, at: now)
            if key == node && revision >= lastAckRevision { unechoedSince = nil }
        case (.removed(let key, let revision), .nodes):
            view.observeDeleted(node: key, revision: revision, at: now)
        }
    }

    /// The start of the startup grace: when the shell starts the member.
    mutating func started(at now: ContinuousClock.Instant) { startedAt = now }

    /// A slot changed. One that names this node while it runs was handed
    /// over to it: owned without a claim. One seen naming it at catch-up
    /// (a restart, a re-read after a fence) is claimed again by the planner.
    private mutating func applySlot(key: String, record: SlotRecord?, revision: UInt64, at now: ContinuousClock.Instant) {
        guard let slot = SlotMap.slot(ofKey: key), table.apply(slot: slot, record: record, revision: revision, at: now) else { return }
        if record?.node != node {
            owned.remove(slot)
        } else if phase == .running {
            owned.insert(slot)
        }
    }

    /// Moves the lifecycle on at `now` and says what to do.
    mutating func step(at now: ContinuousClock.Instant) -> Step {
        let leased = lastAckSent.map { now < $0 + fenceAfter } ?? false
        switch phase {
        case .stopping:
            return .none
        case .starting, .rereading:
            if phase == .rereading && !leased { phase = .fenced; return .none }
            if leased && caughtUp.owners && caughtUp.nodes { phase = .running }
            return phase == .running ? step(at: now) : .none
        case .fenced:
            guard leased else { return .none }
            phase = .rereading
            generation += 1
            caughtUp = (false, false)
            unechoedSince = nil  // the new watches start the echo check afresh
            view.renew(at: now)
            return .restartWatches
        case .running:
            let deaf = unechoedSince.map { now >= $0 + deadAfter } ?? false
            guard leased && !deaf else {
                phase = .fenced
                owned = []
                unechoedSince = nil
                if deaf { stats.staleWatches += 1 } else { stats.fences += 1 }
                return .none
            }
            let writes = planner.writes(table: table, view: view, owned: owned, startedAt: startedAt, now: now)
                .filter { refused[$0.slot] != $0.expectedRevision }
            return writes.isEmpty ? .none : .write(writes)
        }
    }

    /// The writes of a graceful stop; no claim is planned after this.
    mutating func beginStopping(at now: ContinuousClock.Instant) -> [SlotWrite] {
        let wasRunning = phase == .running
        phase = .stopping
        return wasRunning ? planner.handovers(table: table, view: view, owned: owned, now: now) : []
    }

    /// Restarting the watches failed: fenced again, to retry at the next step.
    mutating func watchesFailed() {
        if phase == .rereading { phase = .fenced }
    }

    /// A write was stored at `revision`.
    mutating func stored(_ write: SlotWrite, revision: UInt64, at now: ContinuousClock.Instant) {
        table.apply(slot: write.slot, record: write.record, revision: revision, at: now)
        // Stored while fenced (the write outlived the lease): the re-read claims it again.
        if write.record.node == node && phase == .running { owned.insert(write.slot) } else { owned.remove(write.slot) }
        if write.reason == .claim { stats.claimsWon += 1 } else { stats.handovers += 1 }
    }

    /// The revision check refused a write: another node moved the slot first.
    mutating func refused(_ write: SlotWrite) {
        refused[write.slot] = write.expectedRevision
        if write.reason == .claim { stats.claimsLost += 1 }
    }

    func snapshot(at now: ContinuousClock.Instant) -> OwnershipSnapshot {
        let running = phase == .running
        var owners = [SlotOwner?](repeating: nil, count: SlotMap.count)
        var mine: [Int: UInt64] = [:]
        for slot in 0..<SlotMap.count {
            guard let record = table[slot].record, let holder = record.node else { continue }
            owners[slot] = SlotOwner(node: holder, epoch: record.epoch)
            if running && holder == node && owned.contains(slot) { mine[slot] = record.epoch }
        }
        var live = Set(view.liveNodes(at: now))
        if running { live.insert(node) } else { live.remove(node) }
        return OwnershipSnapshot(node: node, table: owners, owned: mine, fenced: phase == .fenced || phase == .rereading,
                                 ready: running, liveNodes: live.sorted())
    }
}
