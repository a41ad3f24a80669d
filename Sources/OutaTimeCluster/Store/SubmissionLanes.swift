import Foundation
import OutaTimeStore

/// One call to ``JetStreamStore/submit(_:ticket:)``.
struct Submission: Sendable {
    let ticket: UInt64
    let writes: [StoreWrite]

    /// The channels it writes, in order of first appearance; empty for meta only.
    var channels: [String] {
        var names: [String] = []
        for write in writes {
            let name: String? = switch write {
            case .createChannel(let record): record.name
            case .appendEvents(let channel, _, _, _), .saveState(let channel, _), .dropEmptyChannel(let channel): channel
            case .setMeta: nil
            }
            if let name, !names.contains(name) { names.append(name) }
        }
        return names
    }
}

/// The queue between submitters and the store's worker threads: one lane
/// per channel (`""` for meta-only writes), at most one worker per lane at
/// a time (so one append in flight per channel, outcomes in submission
/// order), lanes in parallel.
///
/// A worker takes a lane's queued submissions together: those that arrived
/// while the previous append waited for its ack (they may be merged into
/// one message). A submission writing several channels (the server's batch
/// of idle channels dropped) is a barrier: it runs alone, holding all its
/// lanes, after every earlier submission of those channels and before any
/// later one, as the single SQLite writer would order them.
///
/// `NSCondition`, as in `WriterInbox`: workers sleep until work arrives,
/// `close()` until they have finished.
final class SubmissionLanes: @unchecked Sendable {
    // @unchecked: every field is guarded by `condition`.
    private struct Queued {
        let order: UInt64
        let submission: Submission
        let channels: [String]
        var lane: String { channels.first ?? "" }
    }

    private let condition = NSCondition()
    private var queued: [String: [Queued]] = [:]
    private var busy: Set<String> = []
    /// Queued or running multi-channel submissions: order → channels.
    private var barriers: [UInt64: [String]] = [:]
    private var arrivals: UInt64 = 0
    private var queuedCount = 0
    private var inFlight = 0
    private var paused: Bool
    private var closing = false
    private var workersRunning = 0
    private var counters = WriterStats()

    init(paused: Bool) { self.paused = paused }

    /// Queues a submission; false when closing (nothing queued).
    func append(_ submission: Submission) -> Bool {
        condition.withLock {
            if closing {
                counters.writesRejected += 1
                return false
            }
            arrivals += 1
            let item = Queued(order: arrivals, submission: submission, channels: submission.channels)
            if item.channels.count > 1 { barriers[item.order] = item.channels }
            queued[item.lane, default: []].append(item)
            queuedCount += 1
            condition.broadcast()
            return true
        }
    }

    /// A group a worker runs: its lane, the lanes it holds, and its submissions.
    struct Group {
        let lane: String
        let held: [String]
        let barrier: UInt64?
        let submissions: [Submission]
    }

    /// Blocks until some lane has runnable work, takes it and marks its
    /// lanes busy. Nil once closing and nothing is queued: the worker ends.
    func next() -> Group? {
        condition.withLock {
            while true {
                if !paused || closing, let group = takeRunnable() { return group }
                if closing && queuedCount == 0 { return nil }
                condition.wait()
            }
        }
    }

    /// The oldest runnable work (lanes tried by the age of their first
    /// submission); must hold the lock.
    private func takeRunnable() -> Group? {
        let candidates = queued.filter { !busy.contains($0.key) }.sorted { $0.value[0].order < $1.value[0].order }
        for (lane, items) in candidates {
            let head = items[0]
            if head.channels.count > 1 {
                // A barrier: every other lane idle and without earlier work,
                // and no earlier barrier on any of its channels.
                let clear = head.channels.allSatisfy { channel in
                    channel == lane || (!busy.contains(channel) && (queued[channel]?.first?.order ?? .max) > head.order)
                } && !barriers.contains { $0.key < head.order && !Set($0.value).isDisjoint(with: head.channels) }
                guard clear else { continue }
                pop(lane, count: 1)
                busy.formUnion(head.channels)
                return Group(lane: lane, held: head.channels, barrier: head.order, submissions: [head.submission])
            }
            // Later work of a lane waits behind an earlier barrier on it.
            let limit = barriers.filter { $0.value.contains(lane) }.keys.min() ?? .max
            let group = items.prefix { $0.channels.count <= 1 && $0.order < limit }
            guard !group.isEmpty else { continue }
            pop(lane, count: group.count)
            busy.insert(lane)
            return Group(lane: lane, held: [lane], barrier: nil, submissions: group.map(\.submission))
        }
        return nil
    }

    private func pop(_ lane: String, count: Int) {
        queued[lane]!.removeFirst(count)
        if queued[lane]!.isEmpty { queued[lane] = nil }
        queuedCount -= count
        inFlight += count
    }

    /// Counts a processed group; call before its outcomes are reported, so
    /// that a reported submission is no longer in ``backlog``.
    func record(committed: Int, failed: Int, groupSize: Int, nanoseconds: UInt64) {
        condition.withLock {
            inFlight -= groupSize
            counters.batchesCommitted += 1
            counters.writesCommitted += committed
            counters.writesFailed += failed
            counters.largestBatch = max(counters.largestBatch, groupSize)
            counters.commitNanoseconds &+= nanoseconds
        }
    }

    /// Frees a group's lanes after its outcomes are reported.
    func finish(_ group: Group) {
        condition.withLock {
            busy.subtract(group.held)
            if let barrier = group.barrier { barriers[barrier] = nil }
            condition.broadcast()
        }
    }

    func resume() {
        condition.withLock {
            paused = false
            condition.broadcast()
        }
    }

    /// Marks the calling thread as one of this store's workers.
    func markWorkerThread() { Thread.current.threadDictionary[Self.workerKey] = ObjectIdentifier(self).hashValue }

    /// True on one of this store's worker threads (`close()` must not wait there).
    var isWorkerThread: Bool {
        Thread.current.threadDictionary[Self.workerKey] as? Int == ObjectIdentifier(self).hashValue
    }

    private static let workerKey = "OutaTimeCluster.SubmissionLanes.worker"

    func workerStarted() { condition.withLock { workersRunning += 1 } }

    func workerEnded() {
        condition.withLock {
            workersRunning -= 1
            condition.broadcast()
        }
    }

    /// Refuses new submissions, lets the workers drain the queue (a paused
    /// store commits it too), and waits up to `timeout` for them to end.
    /// True when they all ended.
    @discardableResult
    func closeAndWait(timeout: Duration) -> Bool {
        condition.withLock {
            closing = true
            condition.broadcast()
            let deadline = Date(timeIntervalSinceNow: Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18)
            while workersRunning > 0 {
                if !condition.wait(until: deadline) { return workersRunning == 0 }
            }
            return true
        }
    }

    var backlog: Int { condition.withLock { queuedCount + inFlight } }
    var stats: WriterStats { condition.withLock { counters } }
}
