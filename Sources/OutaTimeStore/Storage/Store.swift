import Foundation
import GRDB
import Synchronization

/// The server's SQLite database: channels with their latest state, and each
/// channel's log of durable events.
///
/// Every method is synchronous and may be called from any thread. Reads run on
/// a pool of reader connections and, thanks to WAL, never wait for a write in
/// progress, so the server may answer `history` on another thread while the
/// ``StoreWriter`` commits. Writes are serialised by GRDB on one connection;
/// in the server they come only from the writer thread, never from the loop,
/// because a commit waits for fsync.
public final class Store: Sendable {
    /// The database file.
    public let path: String
    /// Internal so tests can inspect pragmas and tables with `@testable`.
    let pool: DatabasePool
    /// Each channel's seq as of the last committed write through this store,
    /// for the seq check of appends (see ``apply(_:historyLimit:foldEvery:foldLater:)``).
    let knownSeqs = Mutex<[String: Int64]>([:])
    /// The seqs each channel has in `event_tail`, kept by the writer so that
    /// a fold need not read them back. Exact from the opening fold on (it
    /// empties the tail); every change to the tail goes through this store.
    let tailSeqs = Mutex<[String: ClosedRange<Int64>]>([:])
    /// JSON text bytes committed (states, event data), for ``textBytesWritten``.
    let textBytes = Mutex<Int>(0)
    /// Frames in the WAL after the writer connection's last commit, set by
    /// its WAL hook (see ``checkpointIfDue()``).
    let walFrames = WALFrameCount()
    /// The database file as opened (device and inode), checked before each
    /// write (``checkFile()``).
    let fileIdentity: FileIdentity?

    /// Bytes of JSON text (stored states and event data) committed since
    /// the store was opened: what one command costs in storage, before
    /// SQLite's own overhead.
    public var textBytesWritten: Int { textBytes.withLock { $0 } }

    /// Opens (creating if needed) the database at `path`, creating its parent
    /// folder, and migrates it to the current schema.
    public init(path: String) throws {
        self.path = path
        try DatabasePath.createFolder(of: path)

        var configuration = Configuration()
        configuration.label = "OutaTimeStore"
        // GRDB enables foreign keys by default; said again, although the log
        // tables have none: an event row is written only after its channel's
        // seq check passed (Store.apply), which also proves the channel exists.
        configuration.foreignKeysEnabled = true
        configuration.prepareDatabase { db in
            // An acknowledged command must survive SIGKILL or power loss. In WAL
            // mode NORMAL may lose the last commits on power loss; FULL syncs the
            // WAL on every commit. Group commit keeps that to one fsync per batch.
            try db.execute(sql: Self.durableSync)
        }
        // SQLite's errors name neither the file nor the cause ("unable to
        // open database file"): the folder and the file are looked at then.
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
        } catch {
            throw DatabasePath.diagnose(path, error)
        }
        fileIdentity = FileIdentity(path: path)
        do {
            try prepare()
        } catch {
            throw DatabasePath.diagnose(path, error)
        }
    }

    /// The first statements on a newly opened pool: where a file that is not
    /// a database, or a folder SQLite may not write, shows up.
    private func prepare() throws {
        // GRDB switches the writer to `synchronous = NORMAL` when it enables WAL,
        // after `prepareDatabase` ran. The pool keeps one writer connection for
        // its lifetime, so setting FULL again here holds for every write.
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: Self.durableSync)
            // The writer touches every busy channel's newest and oldest log
            // pages at each fold; SQLite's default 2 MiB page cache made it
            // read them back from the file (docs/BENCHMARKS.md).
            try db.execute(sql: "PRAGMA cache_size = -\(Self.writerCacheKiB)")
            walFrames.install(on: db)
        }
        try StoreSchema.migrator.migrate(pool)
        // Start with the whole log indexed: loading reads every channel's
        // recent events, which would otherwise scan the tail once each. A
        // database this process may not write is read as it is (the tail
        // unfolded): the server then serves reads, and refuses writes.
        do {
            try pool.write { db in try Self.foldTail(historyLimit: nil, tail: nil, in: db) }
        } catch let error as DatabaseError where error.resultCode == .SQLITE_READONLY {
            // Left unfolded; later folds fail like every other write.
        }
    }

    /// Every channel, ordered by name. The server loads these at start-up.
    public func loadChannels() throws -> [ChannelRecord] {
        try pool.read { db in
            // A row's seq is exact as of the last fold; newer events wait in
            // the tail (empty right after opening).
            try Row.fetchAll(db, sql: """
                SELECT name, kind, MAX(c.seq, COALESCE(t.seq, 0)) AS seq, state, state_seq, state_at
                FROM channels c LEFT JOIN (SELECT channel, MAX(seq) AS seq FROM event_tail GROUP BY channel) t
                ON t.channel = c.name ORDER BY name
                """).map(Self.channel(from:))
        }
    }

    /// One of the server's own values (``StoreWrite/setMeta(key:value:)``),
    /// or nil if it was never set.
    public func meta(_ key: String) throws -> String? {
        try pool.read { db in
            try String.fetchOne(db, sql: "SELECT value FROM server_meta WHERE key = ?", arguments: [key])
        }
    }

    /// One channel, or nil if it was never created.
    public func channel(named name: String) throws -> ChannelRecord? {
        try pool.read { db in
            try Row.fetchOne(
                db, sql: """
                    SELECT name, kind, MAX(seq, COALESCE((SELECT MAX(seq) FROM event_tail WHERE channel = ?1), 0)) AS seq,
                    state, state_seq, state_at FROM channels WHERE name = ?1
                    """,
                arguments: [name]
            ).map(Self.channel(from:))
        }
    }

    /// Up to `limit` events of `channel` with seq greater than `after` and at
    /// most `through`, oldest first. Pages through the log with `after` = the
    /// last seq received. `through` keeps out events committed after the
    /// caller's moment: the server reads while the writer commits, and an
    /// event it has not had reported yet is not announced yet either.
    public func history(channel: String, after: Int64, through: Int64 = .max, limit: Int) throws -> [EventRecord] {
        guard limit > 0 else { return [] }
        return try pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT e.channel, e.seq, e.event, e.data, e.at
                    FROM event_runs r JOIN event_log e
                    ON e.id BETWEEN r.first_id + MAX(0, ?2 + 1 - r.first_seq) AND r.first_id + r.last_seq - r.first_seq
                    WHERE r.channel = ?1 AND r.last_seq > ?2 AND r.first_seq <= ?4 AND e.seq <= ?4
                    UNION ALL
                    SELECT channel, seq, event, data, at FROM event_tail WHERE channel = ?1 AND seq > ?2 AND seq <= ?4
                    ORDER BY seq LIMIT ?3
                    """,
                arguments: [channel, after, limit, through]
            ).map { row in
                EventRecord(channel: row["channel"], seq: row["seq"], event: row["event"],
                            data: JSONText(row["data"] as String), at: row["at"])
            }
        }
    }

    /// The keyed commands (protocol §6.9) of `channel`'s events with seq
    /// above `after`, oldest first: a range read of the table's key.
    public func commandKeys(channel: String, after: Int64) throws -> [StoredCommandKey] {
        try pool.read { db in
            try Row.fetchAll(db, sql: """
                SELECT channel, seq, key, action, result, at FROM command_keys WHERE channel = ? AND seq > ? ORDER BY seq
                """, arguments: [channel, after]).map(Self.commandKey(from:))
        }
    }

    /// Every channel's keyed commands, by channel and seq: read once at
    /// start (the table holds only the keys of kept events).
    public func allCommandKeys() throws -> [StoredCommandKey] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT channel, seq, key, action, result, at FROM command_keys ORDER BY channel, seq")
                .map(Self.commandKey(from:))
        }
    }

    private static func commandKey(from row: Row) -> StoredCommandKey {
        StoredCommandKey(channel: row["channel"], seq: row["seq"], at: row["at"],
                         command: CommandKeyRecord(key: row["key"], action: row["action"], result: row["result"]))
    }

    /// The seq of the oldest event still kept for `channel`, or nil when it has
    /// none. Recovery from `since: K` is possible only when this is at most K + 1.
    public func oldestRetainedSeq(channel: String) throws -> Int64? {
        try pool.read { db in
            try Int64.fetchOne(db, sql: """
                SELECT MIN(seq) FROM (
                    SELECT MIN(first_seq) AS seq FROM event_runs WHERE channel = ?1
                    UNION ALL SELECT MIN(seq) FROM event_tail WHERE channel = ?1)
                """, arguments: [channel])
        }
    }

    /// Closes the database connections. Later calls on this store throw.
    /// Close the ``StoreWriter`` first so that nothing is left pending.
    public func close() throws {
        try pool.close()
    }

    static let durableSync = "PRAGMA synchronous = FULL"

    /// WAL frames after which ``checkpointIfDue()`` copies the WAL into the
    /// database: SQLite's own default (`wal_autocheckpoint`).
    public static let checkpointFrames: Int32 = 1_000

    /// Copies the WAL into the database file (a passive checkpoint: it does
    /// not wait for readers) once it holds ``checkpointFrames`` frames or
    /// more; otherwise does nothing.
    ///
    /// SQLite would checkpoint inside the commit that crossed the threshold,
    /// so that the commands of that commit waited for it (a few
    /// milliseconds: hundreds of pages copied and the database file synced).
    /// The group-commit writer calls this after it has reported the commit
    /// instead. Commits still checkpoint themselves, as SQLite does, if the
    /// WAL reaches four times the threshold (nobody called this).
    public func checkpointIfDue() throws {
        guard walFrames.value >= Self.checkpointFrames else { return }
        try pool.writeWithoutTransaction { db in
            _ = try db.checkpoint(.passive)
        }
        walFrames.value = 0
    }

    /// The writer connection's page cache, in KiB.
    static let writerCacheKiB = 32 * 1024

    private static func channel(from row: Row) -> ChannelRecord {
        ChannelRecord(name: row["name"], kind: row["kind"], seq: row["seq"], state: row["state"], stateSeq: row["state_seq"],
                      stateAt: row["state_at"])
    }
}
