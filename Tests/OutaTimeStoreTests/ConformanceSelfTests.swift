import Foundation
import OutaTimeStore
import OutaTimeStoreConformance
import Synchronization
import Testing

/// The conformance checks can fail: each one is run against a SQLite store
/// with one flaw put in front of it, and must record an issue.
@Suite(.timeLimit(.minutes(3))) struct ConformanceSelfTests {
    @Test(arguments: Flaw.allCases)
    func theCheckCatchesTheFlaw(_ flaw: Flaw) throws {
        let check = try #require(DurableStoreConformance.checks.first { $0.name == flaw.caughtBy })
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("outatime-flawed-\(UUID().uuidString)", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let opened = Tally()
        let harness = DurableStoreHarness { startsPaused, onCommit in
            // A harness that forgets its data on every open, for the flaw
            // a backend shows by not persisting at all.
            let generation = flaw == .losesDataOnReopen ? opened.next() : 0
            let path = folder.appendingPathComponent("outatime-\(generation).sqlite").path
            return try FlawedStore(flaw: flaw, startsPaused: startsPaused, onCommit: onCommit) { sink in
                try SQLiteStore(path: path, historyLimit: 1_000, startsPaused: startsPaused, onCommit: sink)
            }
        }
        withKnownIssue("\(flaw) must be caught by '\(check.name)'") {
            try check.run(harness)
        }
    }
}

/// One way a backend may break the ``DurableStore`` contract.
enum Flaw: String, CaseIterable, Sendable {
    case loadsUnsorted, ignoresThrough, hidesStateSeq, forgetsStateTime, reportsTwice, reversesGroups
    case dropsReportsAtClose, acceptsAfterClose, losesDataOnReopen

    /// The check that must notice it.
    var caughtBy: String {
        switch self {
        case .loadsUnsorted: "a created channel loads, ordered by name"
        case .ignoresThrough: "history pages with after, limit and through"
        case .hidesStateSeq: "appends with and without a state: a reader replays after stateSeq"
        case .forgetsStateTime: "saveState replaces the state as of the current seq, stored at now"
        case .reportsTwice, .reversesGroups: "every ticket reported once, each channel's outcomes in submission order"
        case .dropsReportsAtClose: "close reports everything submitted"
        case .acceptsAfterClose: "a submission after close is reported failed (writerClosed)"
        case .losesDataOnReopen: "a new instance on the same data loads everything reported committed"
        }
    }
}

/// A SQLite store behind one ``Flaw``.
final class FlawedStore: DurableStore {
    private let flaw: Flaw
    private let inner: SQLiteStore
    private let onCommit: @Sendable ([StoreCommit]) -> Void
    private let closed = Tally()

    init(flaw: Flaw, startsPaused: Bool, onCommit: @escaping @Sendable ([StoreCommit]) -> Void,
         open: (@escaping @Sendable ([StoreCommit]) -> Void) throws -> SQLiteStore) throws {
        self.flaw = flaw
        self.onCommit = onCommit
        let closed = self.closed
        inner = try open { commits in
            switch flaw {
            case .reportsTwice: onCommit(commits); onCommit(commits)
            case .reversesGroups: onCommit(commits.reversed())
            case .dropsReportsAtClose: if closed.count == 0 { onCommit(commits) }
            default: onCommit(commits)
            }
        }
    }

    func submit(_ writes: [StoreWrite], ticket: UInt64) {
        if flaw == .acceptsAfterClose, closed.count > 0 {
            onCommit([StoreCommit(ticket: ticket, error: nil, batchSize: 1)])
            return
        }
        inner.submit(writes, ticket: ticket)
    }

    func resume() { inner.resume() }

    func close() {
        _ = closed.next()
        inner.close()
    }

    var backlog: Int { inner.backlog }
    var stats: WriterStats { inner.stats }
    var textBytesWritten: Int { inner.textBytesWritten }
    var backendName: String { "flawed" }

    func loadChannels() throws(StoreFailure) -> [ChannelRecord] {
        let channels = try inner.loadChannels()
        return flaw == .loadsUnsorted ? channels.reversed() : channels
    }

    func channel(named name: String) throws(StoreFailure) -> ChannelRecord? {
        guard var record = try inner.channel(named: name) else { return nil }
        if flaw == .hidesStateSeq { record.stateSeq = record.seq }
        if flaw == .forgetsStateTime { record.stateAt = nil }
        return record
    }

    func history(channel: String, after: Int64, through: Int64, limit: Int) throws(StoreFailure) -> [EventRecord] {
        try inner.history(channel: channel, after: after, through: flaw == .ignoresThrough ? .max : through, limit: limit)
    }

    func oldestRetainedSeq(channel: String) throws(StoreFailure) -> Int64? { try inner.oldestRetainedSeq(channel: channel) }

    func meta(_ key: String) throws(StoreFailure) -> String? { try inner.meta(key) }
}

/// A count shared across threads: opens made, closes called.
final class Tally: Sendable {
    private let value = Mutex(0)

    /// Counts one more and returns the new count.
    func next() -> Int { value.withLock { $0 += 1; return $0 } }

    var count: Int { value.withLock { $0 } }
}
