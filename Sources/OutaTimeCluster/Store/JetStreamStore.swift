import Dispatch
import Foundation
import NATS
import OutaTimeStore
import Synchronization

/// The cluster's ``DurableStore``: channel logs in JetStream streams, their
/// snapshots and the server's own values in key-value buckets (design §4.2,
/// §4.5, §4.7, §4.13).
///
/// - Events: partition streams `OT_EV_<p>`, one subject per channel
///   (``ChannelAddress``), one message per commit holding its events as a
///   JSON array, headers `OT-Seq-First`, `OT-Seq-Last`, `Nats-Msg-Id:
///   <channel>:<first seq>`, and the CAS `Nats-Expected-Last-Subject-Sequence`
///   = the channel's previous message's stream seq: a second writer can
///   never extend a channel's log.
/// - Snapshots: KV `OT_SNAP` (`createChannel` is a KV create, every later
///   state the server gives — with an append, or saved — a revision-checked
///   update before the write is reported; the server already decides how
///   often a state goes with the events, the kind's `eventsPerStoredState`);
///   meta: KV `OT_META`.
/// - Writes: ``submit(_:ticket:)`` never blocks. Worker threads take each
///   channel's queued submissions together (one append in flight per
///   channel, channels in parallel) and report through `onCommit`, on a
///   worker thread, each channel's outcomes in submission order.
/// - Reads block on the caller's thread (direct gets and KV reads): call
///   them off the event loop.
///
/// Limits, for now: a submission of several writes is applied in order
/// and stops at the first failure, but is not atomic (JetStream has no
/// transaction across messages and keys; the server's submissions are
/// single writes, but for drops of idle empty channels, which are
/// independent); `history`
/// reads message by message from the first retained one (or from the
/// snapshot's), without a channel-seq → stream-seq index (design §4.7).
public final class JetStreamStore: DurableStore {
    private let connection: NATSConnection
    private let committer: ChannelCommitter
    private let lanes: SubmissionLanes
    private let onCommit: @Sendable ([StoreCommit]) -> Void
    private let closed = Mutex(false)
    private let link: LinkMonitor
    /// Events kept per channel at least (the streams keep
    /// ``messagesBeyondHistory`` messages more).
    public let historyLimit: Int

    /// Messages each channel's subject keeps beyond `historyLimit`, so that
    /// the events after the stored state are never discarded: the server
    /// sends a state at least every `max(64, items)` events, and a channel
    /// holds at most 12,452 items (PROTOCOL.md §11), so fewer than this many
    /// messages (each holds one event or more) ever follow the last state.
    /// `history` still shows only the newest `historyLimit` events (the
    /// server starts it there), as with SQLite, whose tail also holds more.
    public static let messagesBeyondHistory: Int64 = 16_384

    /// Connects to `servers` (`nats://h:p,nats://h:p`), creates or updates
    /// the streams and buckets, and starts `workers` writer threads.
    ///
    /// - Parameters:
    ///   - historyLimit: messages kept per channel (each holds ≥ 1 event),
    ///     so at least this many events are kept (protocol §4: ≥ 1,000).
    ///   - partitions: event streams; channels are spread by a stable hash.
    ///   - replicas: 1 on one server, 3 in a cluster (then the server must be
    ///     ≥ 2.9.21: ``NATSServerVersion/clusterMinimum``).
    ///   - ackTimeout: the wait for each publish ack and API answer; a publish
    ///     is sent up to 3 times (same Msg-Id and CAS) before its outcome is
    ///     reported as unknown.
    ///   - pingInterval: how often libnats pings the server; two unanswered
    ///     pings mark the link down (a frozen server keeps its socket open:
    ///     only the pings reveal it), so an outage shows in ``status`` within
    ///     about three intervals, and calls made during one fail at once.
    ///   - startsPaused: queue submissions without committing until ``resume()``.
    ///   - onCommit: receives outcomes on a worker thread; keep it short.
    public init(
        servers: String, historyLimit: Int, partitions: Int = 3, replicas: Int = 1, workers: Int = 4,
        name: String = "outatime-store", ackTimeout: Duration = .seconds(5), pingInterval: Duration = .seconds(1),
        startsPaused: Bool = false,
        onCommit: @escaping @Sendable ([StoreCommit]) -> Void
    ) throws {
        guard historyLimit >= 1 else { throw NATSError.invalidArgument("historyLimit \(historyLimit): give at least 1") }
        guard (1...64).contains(partitions) else { throw NATSError.invalidArgument("partitions \(partitions): give 1 to 64") }
        guard (1...64).contains(workers) else { throw NATSError.invalidArgument("workers \(workers): give 1 to 64") }
        var options = try NATSConnectionOptions(urls: servers, name: name)
        options.connectTimeout = .seconds(2)
        options.pingInterval = pingInterval
        options.maxPingsOut = 2
        // A publish waiting for its ack when the link drops fails then, not at its timeout.
        options.failRequestsOnDisconnect = true
        let link = LinkMonitor()
        link.wire(&options)
        let connection = try NATSConnection(options)
        link.connected(url: connection.connectedURL) { [weak connection] in connection?.connectedURL }
        do {
            if replicas > 1 {
                try connection.serverVersion().requireCluster(url: connection.connectedURL ?? servers)
            }
            let jetStream = try JetStream(connection, timeout: ackTimeout)
            for partition in 0..<partitions {
                var config = StreamConfig(name: JetStreamStoreNames.eventStream(partition),
                                          subjects: ["\(JetStreamStoreNames.eventSubjectPrefix).\(partition).>"])
                config.replicas = replicas
                config.maxMessagesPerSubject = Int64(historyLimit) + Self.messagesBeyondHistory
                config.discardOld = true
                config.denyDelete = true
                config.denyPurge = true
                config.allowDirect = true
                config.duplicateWindow = .seconds(120)
                try jetStream.ensureStream(config)
            }
            var snapshotConfig = KeyValueConfig(bucket: JetStreamStoreNames.snapshotBucket)
            snapshotConfig.replicas = replicas
            var metaConfig = KeyValueConfig(bucket: JetStreamStoreNames.metaBucket)
            metaConfig.replicas = replicas
            committer = ChannelCommitter(
                jetStream: jetStream, snapshots: try KeyValueBucket(jetStream, config: snapshotConfig),
                meta: try KeyValueBucket(jetStream, config: metaConfig), partitions: partitions,
                snapshotEvery: 1, link: link, writer: name)
        } catch {
            connection.close()
            throw error
        }
        self.connection = connection
        self.link = link
        self.historyLimit = historyLimit
        self.onCommit = onCommit
        lanes = SubmissionLanes(paused: startsPaused)
        for index in 0..<workers {
            let worker = Worker(lanes: lanes, committer: committer, onCommit: onCommit)
            lanes.workerStarted()
            let thread = Thread { [lanes] in
                Thread.current.name = "outatime-js-\(index)"  // ≤ 15 bytes: the kernel's limit
                lanes.markWorkerThread()
                worker.run()
            }
            thread.start()
        }
    }

    deinit { close() }

    /// Queues `writes` and returns at once; the outcome is reported under
    /// `ticket` through `onCommit`. After ``close()`` it is refused and
    /// reported as failed right away, on the caller's thread.
    public func submit(_ writes: [StoreWrite], ticket: UInt64) {
        if !lanes.append(Submission(ticket: ticket, writes: writes)) {
            onCommit([StoreCommit(ticket: ticket, error: .writerClosed, batchSize: 0)])
        }
    }

    /// Lets a store opened with `startsPaused` commit.
    public func resume() { lanes.resume() }

    /// Commits and reports everything submitted (waiting up to 30 s), writes
    /// pending snapshots, and closes the connection; idempotent. Reads fail
    /// afterwards. Called from `onCommit` (a worker thread), it cannot wait
    /// for the workers: it then only stops taking submissions, and the
    /// connection closes when the store is released.
    public func close() {
        let first = closed.withLock { closed in
            defer { closed = true }
            return !closed
        }
        guard first else { return }
        if lanes.isWorkerThread {
            lanes.closeAndWait(timeout: .zero)
            return
        }
        lanes.closeAndWait(timeout: .seconds(30))
        committer.flushSnapshots()
        connection.close()
    }

    /// Submissions not yet reported.
    public var backlog: Int { lanes.backlog }

    /// Counters since the store was opened.
    public var stats: WriterStats { lanes.stats }

    /// Bytes of JSON text (states, event payloads) committed since opened.
    public var textBytesWritten: Int { committer.textBytesWritten }

    /// Publishes sent again because their ack did not come in time.
    public var ackRetries: Int { committer.ackRetries.load(ordering: .relaxed) }

    /// Retried publishes refused by the CAS and found to be stored already
    /// (the subject's last message had their Msg-Id): reported as committed.
    public var lostAcksResolved: Int { committer.lostAcksResolved.load(ordering: .relaxed) }

    /// `jetstream`.
    public var backendName: String { "jetstream" }

    /// The NATS link as libnats last reported it, with the ack counters:
    /// a copy under a short lock, never a call to the server.
    public var status: StoreStatus {
        var current = link.link
        current.ackRetries = ackRetries
        current.lostAcksResolved = lostAcksResolved
        return StoreStatus(backend: backendName, link: current)
    }

    var reader: ChannelCommitter {
        get throws(StoreFailure) {
            if closed.withLock({ $0 }) { throw StoreFailure.writerClosed }
            return committer
        }
    }
}

/// A worker thread's body, apart from the store so it does not retain it.
private struct Worker: Sendable {
    let lanes: SubmissionLanes
    let committer: ChannelCommitter
    let onCommit: @Sendable ([StoreCommit]) -> Void

    func run() {
        while let taken = lanes.next() {
            let group = taken.submissions
            let started = DispatchTime.now().uptimeNanoseconds
            let outcomes = GroupCommit(committer: committer, lane: taken.lane).run(group)
            let nanoseconds = DispatchTime.now().uptimeNanoseconds &- started
            let commits = zip(group, outcomes).map {
                StoreCommit(ticket: $0.ticket, error: $1, batchSize: group.count, commitSeconds: Double(nanoseconds) / 1e9)
            }
            let failed = outcomes.count { $0 != nil }
            lanes.record(committed: group.count - failed, failed: failed, groupSize: group.count, nanoseconds: nanoseconds)
            onCommit(commits)
            lanes.finish(taken)
        }
        lanes.workerEnded()
    }
}
