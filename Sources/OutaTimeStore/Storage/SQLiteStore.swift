import Foundation
import Synchronization

/// The single-node ``DurableStore``: one SQLite file (``Store``), its
/// group-commit ``StoreWriter`` and the ``DatabaseLock`` that keeps a second
/// server off the file.
///
/// A thin owner: every write goes to the writer as it did before this seam
/// existed (one call per submission, nothing per event), every read to the
/// store's reader pool. The lock is SQLite's concern (a JetStream node keeps
/// no local file), so it is taken here, before the file is opened, and
/// given up after the writer and the store closed.
public final class SQLiteStore: DurableStore {
    /// The database underneath: tests and tools read it directly.
    public let database: Store
    private let writer: StoreWriter
    /// Held from opening to ``close()``; nil when opened without one.
    private let lock: Mutex<DatabaseLock?>

    /// Takes the database's lock (unless `locked` is false), opens the file
    /// (creating and migrating it) and starts the writer thread.
    ///
    /// - Parameters:
    ///   - path: the database file; its folder is created.
    ///   - historyLimit: events kept per channel (``StoreWriter``).
    ///   - foldEvery: tail events between folds (``Store/apply(_:historyLimit:foldEvery:foldLater:)``).
    ///   - startsPaused: queue submissions until ``resume()`` or ``close()``.
    ///   - locked: take ``DatabaseLock`` (one server per file); tests that
    ///     open a file twice on purpose pass false.
    ///   - onCommit: receives each group's outcomes (``StoreWriter``).
    /// - Throws: ``DatabaseLockError`` when another server holds the file,
    ///   or the error that kept SQLite from opening it.
    public init(
        path: String,
        historyLimit: Int,
        foldEvery: Int = 1,
        startsPaused: Bool = false,
        locked: Bool = true,
        onCommit: @escaping @Sendable ([StoreCommit]) -> Void
    ) throws {
        // The lock first: a second server must not even migrate the file.
        let lock = locked ? try DatabaseLock(databasePath: path) : nil
        database = try Store(path: path)
        writer = StoreWriter(store: database, historyLimit: historyLimit, foldEvery: foldEvery,
                             startsPaused: startsPaused, onCommit: onCommit)
        self.lock = Mutex(lock)
    }

    deinit { close() }

    /// The database file.
    public var path: String { database.path }

    /// `sqlite`.
    public var backendName: String { "sqlite" }

    // MARK: Writes

    /// Hands `writes` to the group-commit writer (``StoreWriter/submit(_:ticket:)``).
    public func submit(_ writes: [StoreWrite], ticket: UInt64) {
        writer.submit(writes, ticket: ticket)
    }

    /// Lets a store opened with `startsPaused` commit.
    public func resume() {
        writer.resume()
    }

    /// Commits and reports what was submitted, then closes the database
    /// and gives up the lock. Idempotent; from `onCommit` (the writer
    /// thread) it cannot wait for the writer, and leaves the database open.
    public func close() {
        writer.close()
        guard writer.isFinished else { return }
        try? database.close()
        lock.withLock { lock in
            lock?.release()
            lock = nil
        }
    }

    /// Submissions not yet reported.
    public var backlog: Int { writer.backlog }

    /// The writer's counters.
    public var stats: WriterStats { writer.stats }

    /// JSON text bytes committed (``Store/textBytesWritten``).
    public var textBytesWritten: Int { database.textBytesWritten }

    // MARK: Reads

    /// Every channel, ordered by name (``Store/loadChannels()``).
    public func loadChannels() throws(StoreFailure) -> [ChannelRecord] {
        try StoreFailure.mapping { try database.loadChannels() }
    }

    /// One channel, or nil (``Store/channel(named:)``).
    public func channel(named name: String) throws(StoreFailure) -> ChannelRecord? {
        try StoreFailure.mapping { try database.channel(named: name) }
    }

    /// A page of `channel`'s log (``Store/history(channel:after:through:limit:)``).
    public func history(channel: String, after: Int64, through: Int64, limit: Int) throws(StoreFailure) -> [EventRecord] {
        try StoreFailure.mapping { try database.history(channel: channel, after: after, through: through, limit: limit) }
    }

    /// The oldest seq kept (``Store/oldestRetainedSeq(channel:)``).
    public func oldestRetainedSeq(channel: String) throws(StoreFailure) -> Int64? {
        try StoreFailure.mapping { try database.oldestRetainedSeq(channel: channel) }
    }

    /// A channel's keyed commands (``Store/commandKeys(channel:after:)``).
    public func commandKeys(channel: String, after: Int64) throws(StoreFailure) -> [StoredCommandKey] {
        try StoreFailure.mapping { try database.commandKeys(channel: channel, after: after) }
    }

    /// Every channel's keyed commands (``Store/allCommandKeys()``).
    public func allCommandKeys() throws(StoreFailure) -> [StoredCommandKey] {
        try StoreFailure.mapping { try database.allCommandKeys() }
    }

    /// One of the server's own values (``Store/meta(_:)``).
    public func meta(_ key: String) throws(StoreFailure) -> String? {
        try StoreFailure.mapping { try database.meta(key) }
    }
}
