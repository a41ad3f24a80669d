import Foundation
import GRDB
@testable import OutaTimeStore

/// A store in a fresh temp folder, closed and deleted when the test ends.
/// (Swift Testing makes a new instance per test, so tests never share a file.)
final class TemporaryStore {
    let folder: URL
    private(set) var store: Store

    var path: String { folder.appendingPathComponent("outatime.sqlite").path }

    init() throws {
        folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("outatime-store-\(UUID().uuidString)", isDirectory: true)
        store = try Store(path: folder.appendingPathComponent("outatime.sqlite").path)
    }

    /// A database file as an older release left it: migrated only up to
    /// `migration`, with the rows `fill` writes, then opened (and so
    /// migrated the rest of the way) as a store.
    init(leftBy migration: String, fill: (Database) throws -> Void) throws {
        folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("outatime-store-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let path = folder.appendingPathComponent("outatime.sqlite").path
        do {
            let queue = try DatabaseQueue(path: path)
            try StoreSchema.migrator.migrate(queue, upTo: migration)
            try queue.write(fill)
        }
        store = try Store(path: path)
    }

    /// Closes the store and opens the same file again, as after a restart.
    @discardableResult
    func reopen() throws -> Store {
        try store.close()
        store = try Store(path: path)
        return store
    }

    deinit {
        try? store.close()
        try? FileManager.default.removeItem(at: folder)
    }
}

/// Collects what a writer reports, from its thread, for assertions.
final class CommitLog: @unchecked Sendable {
    private let lock = NSLock()
    private var groups: [[StoreCommit]] = []
    private let arrived = DispatchSemaphore(value: 0)

    /// The sink to hand to `StoreWriter(onCommit:)`.
    var sink: @Sendable ([StoreCommit]) -> Void {
        { [self] commits in
            lock.withLock { groups.append(commits) }
            for _ in commits { arrived.signal() }
        }
    }

    /// Every report group in the order the writer delivered them.
    var batches: [[StoreCommit]] { lock.withLock { groups } }

    /// Every report, flattened.
    var all: [StoreCommit] { batches.flatMap { $0 } }

    /// Waits until `count` more tickets were reported (not a timing guess:
    /// the deadline only keeps a broken writer from hanging the suite).
    func waitFor(_ count: Int) -> Bool {
        for _ in 0..<count {
            if arrived.wait(timeout: .now() + 30) == .timedOut { return false }
        }
        return true
    }
}

extension ChannelRecord {
    /// A new channel with seq 0 and a small JSON state.
    static func fresh(_ name: String) -> ChannelRecord {
        ChannelRecord(name: name, kind: String(name.prefix { $0 != "/" }), seq: 0, state: #"{"v":0}"#)
    }
}

extension StoreWrite {
    /// Appends the single event `seq` to `channel` with state `{"v":seq}`.
    static func event(_ channel: String, _ seq: Int64, name: String = "tested") -> StoreWrite {
        .appendEvents(channel: channel, seq: seq, state: #"{"v":\#(seq)}"#, events: [
            EventRecord(channel: channel, seq: seq, event: name, data: #"{"n":\#(seq)}"#,
                        at: "2024-01-01T00:00:00Z"),
        ])
    }

    /// Appends the single event `seq` to `channel` without a state (as lap
    /// stopwatches do between stored states).
    static func stateless(_ channel: String, _ seq: Int64) -> StoreWrite {
        .appendEvents(channel: channel, seq: seq, state: nil, events: [
            EventRecord(channel: channel, seq: seq, event: "tested", data: #"{"n":\#(seq)}"#,
                        at: "2024-01-01T00:00:00Z"),
        ])
    }

    /// Appends events `from...to` to `channel` in one write.
    static func events(_ channel: String, from: Int64, to: Int64) -> StoreWrite {
        .appendEvents(channel: channel, seq: to, state: #"{"v":\#(to)}"#, events: (from...to).map {
            EventRecord(channel: channel, seq: $0, event: "tested", data: #"{"n":\#($0)}"#,
                        at: "2024-01-01T00:00:00Z")
        })
    }
}
