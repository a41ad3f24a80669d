import Foundation
import OutaTimeStore

/// One call to ``JetStreamStore/submit(_:ticket:)``.
struct Submission: Sendable {
    let ticket: UInt64
    let writes: [StoreWrite]

    /// The lane: the first channel the submission writes; `""` for meta only.
    var lane: String {
        for write in writes {
            switch write {
            case .createChannel(let record): return record.name
            case .appendEvents(let channel, _, _, _), .saveState(let channel, _), .dropEmptyChannel(let channel): return channel
            case .setMeta: continue
            }
        }
        return ""
    }
}

/// The queue between submitters and the store's worker threads: one lane
/// per channel, at most one worker per lane at a time (so one append in
/// flight per channel, outcomes in submission order), lanes in parallel.
///
/// A worker takes ALL of a lane's queued submissions at once: those that
/// arrived while the previous append waited for its ack go together (and
/// may be merged into one message). `NSCondition`, as in `WriterInbox`:
/// workers sleep until work arrives, `close()` until they have finished.
final class SubmissionLanes: @unchecked Sendable {
    // @unchecked: every field is guarded by `condition`.
    private let condition = NSCondition()
    private var queued: [String: [Submission]] = [:]
    private var ready: [String] = []
    private var busy: Set<String> = []
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
            let lane = submission.lane
            queued[lane, default: []].append(submission)
            queuedCount += 1
            if !busy.contains(lane) && queued[lane]!.count == 1 { ready.append(lane) }
            condition.broadcast()
            return true
        }
    }

    /// Blocks until a lane has work, then takes all of it and marks the lane
    /// busy. Nil once closing and nothing is queued: the worker ends.
    func next() -> (lane: String, group: [Submission])? {
        condition.withLock {
            while ready.isEmpty || (paused && !closing) {
                if closing && queuedCount == 0 { return nil }
                condition.wait()
            }
            let lane = ready.removeFirst()
            let group = queued.removeValue(forKey: lane) ?? []
            busy.insert(lane)
            queuedCount -= group.count
            inFlight += group.count
            return (lane, group)
        }
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

    /// Frees a lane after its group's outcomes are reported, and makes it
    /// ready again if more arrived meanwhile.
    func finish(lane: String) {
        condition.withLock {
            busy.remove(lane)
            if queued[lane] != nil { ready.append(lane) }
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

    var isClosing: Bool { condition.withLock { closing } }
    var backlog: Int { condition.withLock { queuedCount + inFlight } }
    var stats: WriterStats { condition.withLock { counters } }
}
