import Dispatch
import Foundation
import NATS
import OutaTimeServer
import Synchronization

/// Cluster mode's ``ClusterFabric`` (docs/CLUSTER.md §4.3–4.4) on core NATS:
/// ownership from a ``ClusterMembership``, requests forwarded on
/// `ot.node.<node>.req` with answers on `ot.reply.<node>.<ticket>`, and
/// pushes relayed on `ot.push.<kind>.<name>`.
///
/// Threads: every ``ClusterFabric`` method returns without waiting for the
/// network (a publish hands the message to libnats, which writes it to the
/// socket). Events reach `deliver` from libnats' delivery thread (requests,
/// answers, pushes), the membership's decision thread (ownership) and the
/// fabric's timer thread (timeouts, and failures found while sending), never
/// from the thread that called a method before ``stop()``.
///
/// One connection, named `outatime-fabric-<node>`, carries the membership's
/// heartbeats and KV calls and the fabric's core traffic.
public final class NATSClusterFabric: ClusterFabric {
    /// This node's name.
    public let node: String
    /// The options it was made with.
    public let options: ClusterFabricOptions
    /// The membership it reports (started by ``start(deliver:)``). For tests
    /// and stats: do not start or stop it directly.
    public let membership: ClusterMembership
    let connection: NATSConnection
    let sink: FabricSink
    let counters = FabricCounters()
    let link: FabricLink
    /// `OT-From: <node>`, made once (headers are copied on write).
    let fromHeaders: [String: String]
    let replyPrefix: String
    let pending = Mutex(PendingSends())
    let timerWake = DispatchSemaphore(value: 0)
    private let timerEnded = DispatchSemaphore(value: 0)
    let subscriptions = Mutex(Subscriptions())
    private let phase = Mutex(Phase.created)

    private enum Phase { case created, starting, started, stopped }

    /// The fabric's own subscriptions and the followed channels.
    struct Subscriptions {
        /// True between start and stop: follows subscribe at once (before, they are recorded).
        var live = false
        var requests: NATSSubscription?
        var replies: NATSSubscription?
        var follows: [String: Follow] = [:]
    }

    /// One followed channel: its subscription once made, and the flag that
    /// stops its deliveries the moment it is unfollowed.
    struct Follow {
        let active: ActiveFlag
        var subscription: NATSSubscription?
    }

    /// Connects to `options.servers` (throws ``NATSError`` when none answers)
    /// and opens the membership buckets, creating them when absent (throws
    /// ``MembershipError``, e.g. for a bad node name). Nothing is served and
    /// no heartbeat is put before ``start(deliver:)``.
    public init(options: ClusterFabricOptions) throws {
        self.options = options
        node = options.node
        let sink = FabricSink()
        self.sink = sink
        let link = FabricLink()
        self.link = link
        fromHeaders = [FabricSubjects.fromHeader: options.node]
        replyPrefix = FabricSubjects.replyPrefix(options.node)
        var connectionOptions = NATSConnectionOptions(servers: options.servers, name: "outatime-fabric-\(options.node)")
        connectionOptions.connectTimeout = options.connectTimeout
        connectionOptions.pingInterval = options.pingInterval
        connectionOptions.maxPingsOut = 2
        // Membership's KV calls waiting when the link drops fail then, not at their timeout.
        connectionOptions.failRequestsOnDisconnect = true
        connectionOptions.onDisconnected = { link.up.store(false, ordering: .releasing) }
        connectionOptions.onReconnected = { link.up.store(true, ordering: .releasing) }
        connectionOptions.onClosed = { link.up.store(false, ordering: .releasing) }
        let connection = try NATSConnection(connectionOptions)
        self.connection = connection
        do {
            membership = try ClusterMembership(connection: connection, options: options.effectiveMembership) { snapshot in
                sink(.ownership(ClusterOwnership(snapshot)))
            }
        } catch {
            connection.close()
            throw error
        }
    }

    /// Convenience: ``init(options:)`` with the design's defaults.
    public convenience init(servers: [String], node: String, replicas: Int = 3) throws {
        try self.init(options: ClusterFabricOptions(servers: servers, node: node, replicas: replicas))
    }

    public func slot(of channel: String) -> Int { SlotMap.slot(of: channel) }

    /// Serves `ot.node.<node>.req` and the reply subjects, starts the timer
    /// thread and the membership (whose first report, made at once, is the
    /// first ``ClusterFabricEvent/ownership(_:)``), then subscribes to the
    /// channels followed before. Throws when NATS fails; then nothing runs
    /// and it may be called again. Later calls do nothing.
    public func start(deliver: @escaping @Sendable (ClusterFabricEvent) -> Void) throws {
        let first = phase.withLock { phase in
            guard phase == .created else { return false }
            phase = .starting
            return true
        }
        guard first else { return }
        sink.set(deliver)
        do {
            try subscribeRequestsAndReplies()
            startTimer()
            try membership.start()
        } catch {
            // Follows recorded before start are kept for the next try.
            endSubscriptions(keepingFollows: true)
            stopTimer()
            phase.withLock { $0 = .created }
            throw error
        }
        // A stop() that came meanwhile (it should not: start comes first) wins.
        guard phase.withLock({ phase in
            guard phase == .starting else { return false }
            phase = .started
            return true
        }) else { return }
        subscriptions.withLock { state in
            state.live = true
            for (channel, follow) in state.follows where follow.subscription == nil {
                state.follows[channel]?.subscription = subscribe(push: channel, active: follow.active)
            }
        }
    }

    private func subscribeRequestsAndReplies() throws(NATSError) {
        let sink = sink
        let counters = counters
        let replies = try connection.subscribe(replyPrefix + ">") { [weak self] message in
            self?.received(reply: message)
        }
        let requests: NATSSubscription
        do throws(NATSError) {
            requests = try connection.subscribe(FabricSubjects.request(node)) { message in
                guard let reply = message.reply else { return }
                counters.requests.add(1, ordering: .relaxed)
                sink(.request(ClusterRequest(from: message.headers[FabricSubjects.fromHeader] ?? "",
                                             id: ClusterRequestID(reply), payload: message.data)))
            }
        } catch {
            try? replies.unsubscribe()
            throw error
        }
        subscriptions.withLock { state in
            state.requests = requests
            state.replies = replies
        }
    }

    /// Whether this node's lease is valid at this instant.
    public func awaitOwnership(timeoutMs: Int) -> ClusterOwnership? {
        let deadline = ContinuousClock.now + .milliseconds(timeoutMs)
        while true {
            let table = ClusterOwnership(membership.snapshot)
            if table.ready, table.owners.allSatisfy({ $0 != nil }) { return table }
            guard ContinuousClock.now < deadline else { return nil }
            Thread.sleep(forTimeInterval: 0.02)  // polling the member's own state, bounded by the deadline
        }
    }

    public var mayOwn: Bool { membership.leaseValidUntil.map { ContinuousClock.now < $0 } ?? false }

    /// Leaves gracefully: the membership hands its slots over (bounded by
    /// its timeouts), then every subscription ends, sends still waiting are
    /// answered `unreachable`, and the connection closes. Idempotent.
    public func stop() {
        guard markStopped() else { return }
        membership.stop()
        endServing()
        connection.close()
    }

    /// Stops as a crash would look to the other nodes (for tests): the
    /// connection closes first, nothing is handed over; the others take the
    /// slots once this node's heartbeat is missed. Then ends like ``stop()``.
    public func abandon() {
        guard markStopped() else { return }
        membership.abandon()
        endServing()
        connection.close()
    }

    private func markStopped() -> Bool {
        phase.withLock { phase in
            defer { phase = .stopped }
            return phase != .stopped
        }
    }

    /// Ends the subscriptions and the timer; answers what is still owed.
    private func endServing() {
        endSubscriptions()
        let owed = pending.withLock { $0.close { .unreachable(node: $0, "the fabric of node '\(self.node)' stopped") } }
        stopTimer()
        for outcome in owed { deliverAnswer(outcome) }
    }

    private func endSubscriptions(keepingFollows: Bool = false) {
        let ended = subscriptions.withLock { state in
            state.live = false
            defer {
                state.requests = nil
                state.replies = nil
                if !keepingFollows { state.follows.removeAll() }
            }
            return (state.requests, state.replies, keepingFollows ? [] : Array(state.follows.values))
        }
        try? ended.0?.unsubscribe()
        try? ended.1?.unsubscribe()
        for follow in ended.2 {
            follow.active.on.store(false, ordering: .releasing)
            try? follow.subscription?.unsubscribe()
        }
    }

    /// Waits until every message published so far reached the server and
    /// it answered (follows included): for tests. Blocks up to `timeout`;
    /// never call it on a loop.
    public func flush(timeout: Duration = .seconds(2)) throws(NATSError) {
        try connection.flush(timeout: timeout)
    }

    /// The membership's latest snapshot.
    public var ownershipSnapshot: OwnershipSnapshot { membership.snapshot }

    /// The membership's write counters.
    public var membershipStats: MembershipStats { membership.stats }

    /// The fabric's counters.
    public var stats: ClusterFabricStats { counters.snapshot }

    /// Whether the NATS link is up (libnats' disconnected / reconnected /
    /// closed callbacks). While it is down, sends fail at once.
    public var isConnected: Bool { link.up.load(ordering: .acquiring) }

    /// The channels followed now, sorted.
    public var followedChannels: [String] { subscriptions.withLock { $0.follows.keys.sorted() } }

    // MARK: the timer thread

    private let timerRunning = Mutex(false)
    private let timerStopping = Atomic(false)

    private func startTimer() {
        timerRunning.withLock { running in
            guard !running else { return }
            running = true
            timerStopping.store(false, ordering: .releasing)
            let thread = Thread { [self] in
                timerLoop()
                timerEnded.signal()
            }
            thread.name = "ot-fabric-timer"
            thread.start()
        }
    }

    private func stopTimer() {
        let running = timerRunning.withLock { running in
            defer { running = false }
            return running
        }
        guard running else { return }
        timerStopping.store(true, ordering: .releasing)
        timerWake.signal()
        _ = timerEnded.wait(timeout: .now() + .seconds(2))
    }

    /// Delivers timeouts as they fall due, and failures queued by callers.
    private func timerLoop() {
        while true {
            let (due, next) = pending.withLock { $0.takeDue(at: .now) }
            for outcome in due { deliverAnswer(outcome) }
            if timerStopping.load(ordering: .acquiring) { return }
            let wait = next.map { $0 - .now } ?? .seconds(1)
            _ = timerWake.wait(timeout: .now() + .nanoseconds(max(wait.nanoseconds, 0) + 1))
        }
    }

    func deliverAnswer(_ outcome: PendingSends.Outcome) {
        switch outcome.result {
        case .success: counters.answered.add(1, ordering: .relaxed)
        case .failure(.timeout): counters.timeouts.add(1, ordering: .relaxed)
        case .failure(.unreachable): counters.unreachable.add(1, ordering: .relaxed)
        }
        sink(.answer(ticket: outcome.ticket, outcome.result))
    }
}

/// Where events go: the closure given to ``NATSClusterFabric/start(deliver:)``.
///
/// The closure is kept in a class, not as the Mutex's value: a closure
/// stored as a generic value and read with `withLock { $0 }` (an `inout`
/// of a function type) is reabstracted on the way in and written back
/// wrapped in two more thunks on every read, so each call went through
/// all the thunks of the calls before it (quadratic; the stack grows with
/// it). `docs/bench/cluster_bench.py` found it: a node's relay slowed down
/// run after run and one node died.
final class FabricSink: Sendable {
    private final class Target: Sendable {
        let deliver: @Sendable (ClusterFabricEvent) -> Void
        init(_ deliver: @escaping @Sendable (ClusterFabricEvent) -> Void) { self.deliver = deliver }
    }

    private let target = Mutex<Target?>(nil)

    func set(_ deliver: @escaping @Sendable (ClusterFabricEvent) -> Void) { target.withLock { $0 = Target(deliver) } }

    func callAsFunction(_ event: ClusterFabricEvent) {
        target.withLock { $0 }?.deliver(event)
    }
}

/// Whether the NATS link is up, as libnats' callbacks say.
final class FabricLink: Sendable {
    let up = Atomic(true)
}

/// Cleared when a channel is unfollowed: its deliveries stop at once.
final class ActiveFlag: Sendable {
    let on = Atomic(true)
}

/// The fabric's counters, bumped without a lock.
final class FabricCounters: Sendable {
    let sends = Atomic(0)
    let answered = Atomic(0)
    let timeouts = Atomic(0)
    let unreachable = Atomic(0)
    let lateReplies = Atomic(0)
    let noResponders = Atomic(0)
    let requests = Atomic(0)
    let answerFailures = Atomic(0)
    let pushesPublished = Atomic(0)
    let pushFailures = Atomic(0)
    let pushesReceived = Atomic(0)
    let followFailures = Atomic(0)

    var snapshot: ClusterFabricStats {
        var stats = ClusterFabricStats()
        stats.sends = sends.load(ordering: .relaxed)
        stats.answered = answered.load(ordering: .relaxed)
        stats.timeouts = timeouts.load(ordering: .relaxed)
        stats.unreachable = unreachable.load(ordering: .relaxed)
        stats.lateReplies = lateReplies.load(ordering: .relaxed)
        stats.noResponders = noResponders.load(ordering: .relaxed)
        stats.requests = requests.load(ordering: .relaxed)
        stats.answerFailures = answerFailures.load(ordering: .relaxed)
        stats.pushesPublished = pushesPublished.load(ordering: .relaxed)
        stats.pushFailures = pushFailures.load(ordering: .relaxed)
        stats.pushesReceived = pushesReceived.load(ordering: .relaxed)
        stats.followFailures = followFailures.load(ordering: .relaxed)
        return stats
    }
}

extension ClusterOwnership {
    /// The server's view of a membership snapshot.
    init(_ snapshot: OwnershipSnapshot) {
        self.init(owners: snapshot.table.map { $0?.node }, owned: Set(snapshot.owned.keys),
                  fenced: snapshot.fenced, ready: snapshot.ready, liveNodes: snapshot.liveNodes)
    }
}

extension Duration {
    /// Whole nanoseconds (saturating at Int.max).
    var nanoseconds: Int {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? (seconds < 0 ? Int(Int64.min) : Int(Int64.max)) : Int(scaled + attoseconds / 1_000_000_000)
    }
}
