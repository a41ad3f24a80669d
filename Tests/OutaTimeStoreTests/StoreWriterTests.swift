import Foundation
@testable import OutaTimeStore
import Testing

/// A value set on one thread and read on another: the writer, for its own
/// `onCommit` to reach it; what the writer thread saw, for the test.
private final class Shared<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value?
    var value: Value? {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}

/// The group-commit writer on a real database file. Group sizes are made
/// deterministic with `startsPaused`: everything is submitted before the
/// writer may run, never by sleeping.
@Suite(.timeLimit(.minutes(3))) struct StoreWriterTests {
    @Test func submissionsFromManyThreadsCommitAsOneGroup() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        let log = CommitLog()
        let writer = StoreWriter(store: store, historyLimit: 1_000, startsPaused: true, onCommit: log.sink)
        DispatchQueue.concurrentPerform(iterations: 100) { index in
            writer.submit([.createChannel(.fresh("timers/t\(index)"))], ticket: UInt64(index))
        }
        #expect(writer.backlog == 100)
        writer.close()

        #expect(log.batches.count == 1)
        #expect(Set(log.all.map(\.ticket)) == Set(0..<100))
        #expect(log.all.allSatisfy { $0.succeeded && $0.batchSize == 100 })
        // The group's commit time (fsync included), the same on every ticket.
        let seconds = try #require(log.all.first?.commitSeconds)
        #expect(seconds > 0 && seconds < 60)
        #expect(log.all.allSatisfy { $0.commitSeconds == seconds })
        #expect(writer.stats.batchesCommitted == 1)
        #expect(writer.stats.writesCommitted == 100)
        #expect(writer.stats.largestBatch == 100)
        #expect(writer.backlog == 0)
        #expect(try store.loadChannels().count == 100)
    }

    /// The kernel knows the writer thread by its name (`ps -L`, `top -H`,
    /// `perf`, and the per-thread CPU of docs/bench/commands.sh): read by the
    /// thread itself, in `onCommit`, which runs on it.
    @Test func theKernelKnowsTheWriterThreadByItsName() throws {
        #expect(StoreWriter.threadName.utf8.count <= 15, "Linux refuses longer thread names")
        #if os(Linux)
        let temp = try TemporaryStore()
        let seen = Shared<String>()
        let writer = StoreWriter(store: temp.store, historyLimit: 1_000) { _ in
            seen.value = try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
        }
        writer.submit([.createChannel(.fresh("laps/a"))], ticket: 0)
        writer.close()
        #expect(seen.value == StoreWriter.threadName + "\n")
        #endif
    }

    @Test func reportsFollowSubmissionOrder() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        let log = CommitLog()
        let writer = StoreWriter(store: store, historyLimit: 1_000, onCommit: log.sink)
        // Running writer: group sizes depend on timing, so only
        // completeness and order are asserted here.
        writer.submit([.createChannel(.fresh("laps/a"))], ticket: 0)
        for seq in Int64(1)...300 {
            writer.submit([.event("laps/a", seq)], ticket: UInt64(seq))
        }
        writer.close()
        #expect(log.all.map(\.ticket) == Array(0...300))
        #expect(log.all.allSatisfy { $0.succeeded })
        #expect(writer.stats.writesCommitted == 301)
        #expect(try store.channel(named: "laps/a")?.seq == 300)
    }

    @Test func aFailingWriteFailsOnlyItsTicket() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        let log = CommitLog()
        let writer = StoreWriter(store: store, historyLimit: 1_000, startsPaused: true, onCommit: log.sink)
        writer.submit([.createChannel(.fresh("laps/a"))], ticket: 1)
        writer.submit([.event("laps/a", 1)], ticket: 2)
        writer.submit([.event("laps/ghost", 1)], ticket: 3)
        writer.submit([.event("laps/a", 2)], ticket: 4)
        writer.close()

        #expect(log.batches.count == 1)
        #expect(log.all.map(\.ticket) == [1, 2, 3, 4])
        #expect(log.all.map(\.succeeded) == [true, true, false, true])
        #expect(log.all[2].error?.description.contains("laps/ghost") == true)
        #expect(log.all.allSatisfy { $0.batchSize == 4 })
        #expect(writer.stats.batchFallbacks == 1)
        #expect(writer.stats.batchesCommitted == 0)
        #expect(writer.stats.writesCommitted == 3)
        #expect(writer.stats.writesFailed == 1)
        #expect(try store.channel(named: "laps/a")?.seq == 2)
        #expect(try store.history(channel: "laps/a", after: 0, limit: 10).map(\.seq) == [1, 2])
        #expect(try store.channel(named: "laps/ghost") == nil)
    }

    @Test func aLoneFailingWriteIsReported() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        let log = CommitLog()
        let writer = StoreWriter(store: store, historyLimit: 1_000, onCommit: log.sink)
        writer.submit([.saveState(channel: "timers/none", state: "{}")], ticket: 9)
        writer.close()
        #expect(log.all == [StoreCommit(ticket: 9, error: .refused(.unknownChannel("timers/none")), batchSize: 1)])
        #expect(writer.stats.writesFailed == 1)
    }

    @Test func writerPrunesToTheHistoryLimit() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        let log = CommitLog()
        let writer = StoreWriter(store: store, historyLimit: 3, onCommit: log.sink)
        writer.submit([.createChannel(.fresh("laps/a"))], ticket: 0)
        for seq in Int64(1)...10 {
            writer.submit([.event("laps/a", seq)], ticket: UInt64(seq))
        }
        writer.close()
        #expect(log.all.count == 11)
        #expect(try store.history(channel: "laps/a", after: 0, limit: 100).map(\.seq) == [8, 9, 10])
    }

    @Test("the writer folds after reporting the group that made a fold due")
    func writerFoldsAfterReporting() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        let log = CommitLog()
        let writer = StoreWriter(store: store, historyLimit: 3, foldEvery: 4, startsPaused: true, onCommit: log.sink)
        writer.submit([.createChannel(.fresh("laps/a"))], ticket: 0)
        for seq in Int64(1)...5 {
            writer.submit([.event("laps/a", seq)], ticket: UInt64(seq))
        }
        writer.resume()
        writer.close()
        #expect(log.all.count == 6 && log.all.allSatisfy(\.succeeded))
        #expect(writer.stats.folds == 1 && writer.stats.foldsFailed == 0)
        // Rows 1...5 passed 4: folded and pruned to 3 (the tail is empty again).
        #expect(try store.history(channel: "laps/a", after: 0, limit: 100).map(\.seq) == [3, 4, 5])
        let tail = try store.pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM event_tail") }
        #expect(tail == 0)
    }

    @Test func resumeLetsAPausedWriterCommit() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        let log = CommitLog()
        let writer = StoreWriter(store: store, historyLimit: 1_000, startsPaused: true, onCommit: log.sink)
        defer { writer.close() }
        for index in 0..<3 {
            writer.submit([.createChannel(.fresh("laps/l\(index)"))], ticket: UInt64(index))
        }
        writer.resume()
        #expect(log.waitFor(3))
        #expect(log.batches.map(\.count) == [3])
        #expect(try store.loadChannels().count == 3)
    }

    @Test func closeIsIdempotentAndRefusesLaterSubmissions() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        let log = CommitLog()
        let writer = StoreWriter(store: store, historyLimit: 1_000, onCommit: log.sink)
        writer.submit([.createChannel(.fresh("laps/a"))], ticket: 1)
        writer.close()
        writer.close()
        writer.submit([.createChannel(.fresh("laps/b"))], ticket: 2)
        writer.close()
        #expect(log.all == [
            StoreCommit(ticket: 1, error: nil, batchSize: 1),
            StoreCommit(ticket: 2, error: .writerClosed, batchSize: 0),
        ])
        #expect(log.all.map { $0.commitSeconds > 0 } == [true, false], "a refused submission took no commit")
        #expect(writer.stats.writesRejected == 1)
        #expect(try store.loadChannels().map(\.name) == ["laps/a"])
    }

    @Test func closeFromTheCommitCallbackDoesNotDeadlock() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        let box = Shared<StoreWriter>()
        let log = CommitLog()
        let writer = StoreWriter(store: store, historyLimit: 1_000, startsPaused: true) { commits in
            log.sink(commits)
            box.value?.close()
        }
        box.value = writer
        writer.submit([.createChannel(.fresh("laps/a"))], ticket: 1)
        writer.resume()
        #expect(log.waitFor(1))
        writer.close()
        writer.submit([], ticket: 2)
        #expect(log.all.map(\.succeeded) == [true, false])
        box.value = nil
    }

    @Test func committedDataSurvivesReopening() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        let log = CommitLog()
        let writer = StoreWriter(store: store, historyLimit: 1_000, onCommit: log.sink)
        writer.submit([.createChannel(.fresh("delorean/dmc12")), .events("delorean/dmc12", from: 1, to: 2)],
                      ticket: 1)
        writer.submit([.saveState(channel: "delorean/dmc12", state: #"{"final":true}"#)], ticket: 2)
        writer.close()
        #expect(log.all.allSatisfy { $0.succeeded })
        let reopened = try temp.reopen()
        #expect(try reopened.loadChannels() == [
            ChannelRecord(name: "delorean/dmc12", kind: "delorean", seq: 2, state: #"{"final":true}"#),
        ])
        #expect(try reopened.history(channel: "delorean/dmc12", after: 0, limit: 10).map(\.event)
                == ["tested", "tested"])
    }

    @Test func droppingTheWriterFlushesIt() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        let log = CommitLog()
        do {
            let writer = StoreWriter(store: store, historyLimit: 1_000, startsPaused: true, onCommit: log.sink)
            writer.submit([.createChannel(.fresh("laps/a"))], ticket: 1)
        }
        #expect(log.all.map(\.ticket) == [1])
        #expect(try store.loadChannels().count == 1)
    }
}
