import Dispatch
import Foundation
import NATS
import Synchronization

/// Membership and slot ownership of one cluster node (design §4.3): its
/// heartbeat in `OT_NODES`, the slot table in `OT_OWNERS`, claims and
/// takeovers by revision-checked KV writes, the self-fence and the graceful
/// handover. It knows nothing of the server: it reports through `onChange`.
///
/// Threads: a heartbeat thread (one put per interval, so a slow claim never
/// delays it), a decision thread (the fence, claims and handovers, and every
/// `onChange` call, one at a time) and the two watch threads. Every NATS
/// call blocks at most its timeout; ``stop()`` and ``abandon()`` are bounded.
/// The threads keep the member alive until one of those is called.
public final class ClusterMembership: Sendable {
    /// The options it runs with.
    public let options: MembershipOptions
    let connection: NATSConnection
    let nodes: KeyValueBucket
    let beats: KeyValueBucket
    let owners: KeyValueBucket
    let onChange: @Sendable (OwnershipSnapshot) -> Void
    let state: Mutex<MembershipState>
    let watches = Mutex<[KeyValueWatch]>([])
    let lastReported = Mutex<OwnershipSnapshot?>(nil)
    let stopping = Atomic(false)
    let heartbeatsPaused = Atomic(false)
    let beatCount = Atomic(0)
    let decisionWake = DispatchSemaphore(value: 0)
    /// True while a wake-up of the decision thread is pending: a burst of
    /// watch events (a takeover moves ~85 keys) wakes it once, not per event.
    let decisionWakePending = Atomic(false)
    let heartbeatWake = DispatchSemaphore(value: 0)
    private let decisionEnded = DispatchSemaphore(value: 0)
    private let heartbeatEnded = DispatchSemaphore(value: 0)
    private let started = Mutex(false)

    /// Opens (creating when absent) the two buckets on `connection`; call
    /// ``start()`` to join. `onChange` runs on the decision thread, after
    /// every change of the snapshot; keep it short (hop to your loop).
    public init(connection: NATSConnection, options: MembershipOptions,
                onChange: @escaping @Sendable (OwnershipSnapshot) -> Void) throws(MembershipError) {
        try options.validate()
        self.options = options
        self.connection = connection
        self.onChange = onChange
        do throws(NATSError) {
            let api = try JetStream(connection, timeout: options.operationTimeout)
            var nodesConfig = KeyValueConfig(bucket: options.nodesBucket)
            nodesConfig.replicas = options.replicas
            nodesConfig.maxAge = options.nodesMaxAge
            var ownersConfig = KeyValueConfig(bucket: options.ownersBucket)
            ownersConfig.replicas = options.replicas
            nodes = try KeyValueBucket(api, config: nodesConfig)
            owners = try KeyValueBucket(api, config: ownersConfig)
            // Heartbeats on a context of their own: a put waits heartbeatTimeout, not operationTimeout.
            beats = try KeyValueBucket(try JetStream(connection, timeout: options.heartbeatTimeout), config: nodesConfig)
        } catch {
            throw .nats(error)
        }
        state = Mutex(MembershipState(node: options.node, policy: options.policy, deadAfter: options.deadAfter,
                                      fenceAfter: options.fenceAfter, now: .now))
    }

    /// Puts the first heartbeat (throws if it fails), starts the watches
    /// and the threads. Slots are claimed from then on, as the policy says.
    public func start() throws(MembershipError) {
        let first = started.withLock { started in
            defer { started = true }
            return !started
        }
        guard first else { return }
        state.withLock { $0.started(at: .now) }
        do throws(NATSError) {
            try beat()
            try startWatches(generation: 0)
        } catch {
            stopWatches()
            started.withLock { $0 = false }  // no thread to wait for; start() may be tried again
            throw .nats(error)
        }
        spawn("ot-membership-heartbeat", ended: heartbeatEnded) { $0.heartbeatLoop() }
        spawn("ot-membership-decide", ended: decisionEnded) { $0.decisionLoop() }
    }

    /// The latest snapshot (also the one last given to `onChange`).
    public var snapshot: OwnershipSnapshot { state.withLock { $0.snapshot(at: .now) } }

    /// Until when this node may act as the owner of its slots (now < the
    /// result), or nil when it may not. Check it before each owner action:
    /// a snapshot says what was true when it was made, this says what is
    /// true now, even if the process was frozen in between.
    public var leaseValidUntil: ContinuousClock.Instant? { state.withLock { $0.leaseValidUntil(at: .now) } }

    /// The write counters.
    public var stats: MembershipStats { state.withLock { $0.stats } }

    /// Graceful stop (design §4.3, handover): stops claiming and
    /// heartbeating, deletes its heartbeat key (others take it for gone at
    /// once, and leave its slots to it for ``OwnershipPolicy/handoverWait``),
    /// hands each owned slot to its HRW winner among the other live nodes
    /// with a revision-checked update (a slot already taken is left alone),
    /// then closes the watches. Does not close the connection. Idempotent;
    /// bounded (a failing NATS ends the handovers at the first failure).
    public func stop() {
        guard stopThreads() else { return }
        let writes = state.withLock { $0.beginStopping(at: .now) }
        if started.withLock({ $0 }) { try? nodes.delete(options.node) }
        // Stop at the first NATS failure: each would wait its timeout, and
        // the others claim what is left after the dead time and handoverWait.
        for write in writes {
            guard perform(write) else { break }
        }
        stopWatches()
        report()
    }

    /// Stops as a crash would look to the others: closes the connection
    /// first (nothing more is written, nothing is handed over), then ends
    /// the threads. For tests and for a process about to die. Idempotent.
    public func abandon() {
        connection.close()
        guard stopThreads() else { return }
        _ = state.withLock { $0.beginStopping(at: .now) }
        stopWatches()
    }

    /// For tests: stops (or restarts) heartbeat puts, as if they could no
    /// longer reach NATS, while everything else runs.
    public func pauseHeartbeats(_ paused: Bool) {
        heartbeatsPaused.store(paused, ordering: .releasing)
        heartbeatWake.signal()
    }

    /// Ends both threads (bounded); false when already stopping.
    private func stopThreads() -> Bool {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return false }
        guard started.withLock({ $0 }) else { return true }
        decisionWake.signal()
        heartbeatWake.signal()
        let bound = DispatchTime.now() + .milliseconds(Int(options.operationTimeout.milliseconds + options.heartbeatTimeout.milliseconds + 1000))
        _ = heartbeatEnded.wait(timeout: bound)
        _ = decisionEnded.wait(timeout: bound)
        return true
    }

    private func spawn(_ name: String, ended: DispatchSemaphore, _ body: @escaping @Sendable (ClusterMembership) -> Void) {
        let thread = Thread { [self] in
            body(self)
            ended.signal()
        }
        thread.name = name
        thread.start()
    }
}

extension Duration {
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
