import Foundation

/// One call to ``StoreWriter/submit(_:ticket:)``.
struct Submission: Sendable {
    let ticket: UInt64
    let writes: [StoreWrite]
}

/// The state shared by submitters, the writer thread and `close()`, all
/// guarded by one condition variable.
///
/// `NSCondition` rather than `Synchronization.Mutex`: the writer must sleep
/// until work arrives, which a mutex alone cannot express, and it keeps the
/// package's macOS 14 deployment target. Every waiter re-checks its own
/// predicate, so state changes `broadcast` (one condition serves both the
/// writer waiting for work and `close()` waiting for the writer to finish).
final class WriterInbox: @unchecked Sendable {
    private let condition = NSCondition()
    private var pending: [Submission] = []
    private var inFlight = 0
    private var paused: Bool
    private var closing = false
    private var finished = false
    private var counters = WriterStats()
    private var thread: Thread?

    init(paused: Bool) {
        self.paused = paused
    }

    /// Queues a submission; false when the writer is closing (nothing queued).
    func append(_ submission: Submission) -> Bool {
        condition.withLock {
            if closing {
                counters.writesRejected += 1
                return false
            }
            pending.append(submission)
            condition.broadcast()
            return true
        }
    }

    /// Blocks until there is work, then takes ALL of it: everything submitted
    /// while the previous batch was committing becomes the next group.
    /// Returns nil once closing and drained: the writer thread then ends.
    func next() -> [Submission]? {
        condition.withLock {
            while !closing && (paused || pending.isEmpty) {
                condition.wait()
            }
            if pending.isEmpty { return nil }
            var batch: [Submission] = []
            swap(&batch, &pending)
            inFlight = batch.count
            return batch
        }
    }

    /// Counts a processed group (called before its outcomes are reported).
    func record(batchSize: Int, committed: Int, failed: Int, fellBack: Bool) {
        condition.withLock {
            inFlight = 0
            if fellBack { counters.batchFallbacks += 1 } else { counters.batchesCommitted += 1 }
            counters.writesCommitted += committed
            counters.writesFailed += failed
            counters.largestBatch = max(counters.largestBatch, batchSize)
        }
    }

    /// Adds the time one group took to commit.
    func recordCommitTime(nanoseconds: UInt64) {
        condition.withLock { counters.commitNanoseconds &+= nanoseconds }
    }

    /// Counts a fold made after a group (see ``StoreWriter``).
    func recordFold(failed: Bool) {
        condition.withLock {
            if failed { counters.foldsFailed += 1 } else { counters.folds += 1 }
        }
    }

    func resume() {
        condition.withLock {
            paused = false
            condition.broadcast()
        }
    }

    /// From now on submissions are refused; the writer drains what is queued
    /// (even when paused) and stops.
    func beginClose() {
        condition.withLock {
            closing = true
            condition.broadcast()
        }
    }

    /// Called by the writer thread as its last act.
    func markFinished() {
        condition.withLock {
            finished = true
            condition.broadcast()
        }
    }

    /// Whether the writer thread has ended (after ``markFinished()``).
    var isFinished: Bool { condition.withLock { finished } }

    func waitUntilFinished() {
        condition.withLock {
            while !finished { condition.wait() }
        }
    }

    /// The writer's thread, set once before it starts. `Thread` is not
    /// Sendable, so it lives here behind the lock rather than in the writer.
    func setWriterThread(_ writer: Thread) {
        condition.withLock { thread = writer }
    }

    func isWriterThread(_ candidate: Thread) -> Bool {
        condition.withLock { thread === candidate }
    }

    var stats: WriterStats { condition.withLock { counters } }

    /// Submissions not yet reported: queued plus the group being committed.
    var backlog: Int { condition.withLock { pending.count + inFlight } }
}
