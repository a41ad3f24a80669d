import Foundation

/// The group-commit writer: takes writes from the server's loop thread
/// without blocking it, commits them on its own thread, and reports back.
///
/// Durability costs one fsync per transaction (`synchronous = FULL`), which
/// would cap throughput at the disk's sync rate if every command had its own.
/// So the writer takes EVERYTHING pending at once and commits it in one
/// transaction: under load, the commands that arrive during one fsync share
/// the next one.
///
/// Why a dedicated `Thread` rather than a serial `DispatchQueue`: the writer
/// spends its time blocked in fsync, and a thread of its own keeps that off
/// the shared Dispatch pool (which GRDB's own queues use too); a condition
/// variable also makes "sleep until work, then take it all" direct, where a
/// queue would need one block per submission and its own coalescing.
///
/// Outcomes go to `onCommit`, called on the writer thread once per group with
/// every ticket of the group in submission order. Keep it short (append to an
/// inbox and `uv_async_send`): the next group waits for it. Every submitted
/// ticket is reported exactly once.
public final class StoreWriter: Sendable {
    private let inbox: WriterInbox
    private let onCommit: @Sendable ([StoreCommit]) -> Void

    /// Starts the writer thread.
    ///
    /// - Parameters:
    ///   - historyLimit: events kept per channel; older ones are pruned in the
    ///     same transaction that appends (protocol §4: at least 1,000).
    ///   - foldEvery: move new events from the append-only tail into the
    ///     indexed log every this many (see ``Store/apply(_:historyLimit:foldEvery:foldLater:)``).
    ///   - startsPaused: queue submissions without committing until
    ///     ``resume()`` or ``close()``; lets tests build a known batch.
    ///   - onCommit: receives each group's outcomes on the writer thread.
    public init(
        store: Store,
        historyLimit: Int,
        foldEvery: Int = 1,
        startsPaused: Bool = false,
        onCommit: @escaping @Sendable ([StoreCommit]) -> Void
    ) {
        precondition(historyLimit >= 1, "historyLimit must be at least 1")
        let inbox = WriterInbox(paused: startsPaused)
        self.inbox = inbox
        self.onCommit = onCommit
        // The thread holds the loop, not `self`, so an unused writer can
        // still be deinitialised (which closes it).
        let loop = WriterLoop(store: store, historyLimit: historyLimit, foldEvery: foldEvery, inbox: inbox, onCommit: onCommit)
        let thread = Thread {
            // Named from inside: on Linux a name set before `start()`
            // never reaches the kernel, and the kernel refuses names over
            // 15 bytes. `ps -L`, `top -H` and `perf` then tell this thread
            // from the event loop.
            Thread.current.name = StoreWriter.threadName
            loop.run()
        }
        inbox.setWriterThread(thread)
        thread.start()
    }

    deinit {
        close()
    }

    /// The writer thread's name, as `ps -L` and `/proc/PID/task/TID/comm`
    /// show it (at most 15 bytes, the kernel's limit).
    public static let threadName = "outatime-writer"

    /// Queues `writes` to be committed together (all or none) and returns at
    /// once. Their outcome is reported under `ticket` through `onCommit`.
    /// After ``close()`` the submission is refused and reported as failed
    /// right away, on the caller's thread.
    public func submit(_ writes: [StoreWrite], ticket: UInt64) {
        if !inbox.append(Submission(ticket: ticket, writes: writes)) {
            onCommit([StoreCommit(ticket: ticket, error: .writerClosed, batchSize: 0)])
        }
    }

    /// Lets a writer created with `startsPaused` commit.
    public func resume() {
        inbox.resume()
    }

    /// Commits and reports everything already submitted, then stops the thread.
    /// Blocks until done; idempotent. Called from `onCommit` (the writer
    /// thread itself) it cannot wait for itself: it then only asks the thread
    /// to stop after the current group.
    public func close() {
        inbox.beginClose()
        if !inbox.isWriterThread(Thread.current) {
            inbox.waitUntilFinished()
        }
    }

    /// Whether the writer thread has ended: everything submitted is
    /// reported. False after a ``close()`` called from `onCommit`.
    var isFinished: Bool { inbox.isFinished }

    /// Counters since start.
    public var stats: WriterStats { inbox.stats }

    /// Submissions not yet reported (queued or being committed). A growing
    /// backlog means the disk cannot keep up: a reason to answer `server_busy`.
    public var backlog: Int { inbox.backlog }
}

/// The writer thread's body, kept apart from ``StoreWriter`` so the thread
/// does not retain the writer.
private struct WriterLoop: Sendable {
    let store: Store
    let historyLimit: Int
    let foldEvery: Int
    let inbox: WriterInbox
    let onCommit: @Sendable ([StoreCommit]) -> Void

    func run() {
        while let batch = inbox.next() {
            let started = DispatchTime.now().uptimeNanoseconds
            var (commits, foldDue) = commit(batch)
            let nanoseconds = DispatchTime.now().uptimeNanoseconds &- started
            inbox.recordCommitTime(nanoseconds: nanoseconds)
            let seconds = Double(nanoseconds) / 1e9
            for index in commits.indices { commits[index].commitSeconds = seconds }
            onCommit(commits)
            // After reporting: the commands of this group are answered
            // without waiting for the fold. A failed fold is made again at
            // the next one due; until then the tail just grows.
            if foldDue {
                do {
                    try store.foldTail(historyLimit: historyLimit)
                    inbox.recordFold(failed: false)
                } catch {
                    inbox.recordFold(failed: true)
                }
            }
            // Also after reporting, for the same reason; a failure is
            // harmless (the WAL just grows until the next one succeeds).
            try? store.checkpointIfDue()
        }
        inbox.markFinished()
    }

    /// One transaction for the whole group; if it fails, each submission is
    /// retried in a transaction of its own so that one bad write (a bug, a
    /// constraint) fails only its own ticket.
    private func commit(_ batch: [Submission]) -> (commits: [StoreCommit], foldDue: Bool) {
        let size = batch.count
        do {
            // Lazily flattened: no copy of every write into one array.
            let foldDue = try store.apply(batch.lazy.flatMap(\.writes), historyLimit: historyLimit,
                                          foldEvery: foldEvery, foldLater: true)
            inbox.record(batchSize: size, committed: size, failed: 0, fellBack: false)
            return (batch.map { StoreCommit(ticket: $0.ticket, error: nil, batchSize: size) }, foldDue)
        } catch {
            if size == 1 {
                inbox.record(batchSize: 1, committed: 0, failed: 1, fellBack: false)
                return ([StoreCommit(ticket: batch[0].ticket, error: StoreFailure(error), batchSize: 1)], false)
            }
        }
        var foldDue = false
        let commits = batch.map { submission in
            do {
                foldDue = try store.apply(submission.writes, historyLimit: historyLimit,
                                          foldEvery: foldEvery, foldLater: true) || foldDue
                return StoreCommit(ticket: submission.ticket, error: nil, batchSize: size)
            } catch {
                return StoreCommit(ticket: submission.ticket, error: StoreFailure(error), batchSize: size)
            }
        }
        let failed = commits.filter { !$0.succeeded }.count
        inbox.record(batchSize: size, committed: size - failed, failed: failed, fellBack: true)
        return (commits, foldDue)
    }
}
