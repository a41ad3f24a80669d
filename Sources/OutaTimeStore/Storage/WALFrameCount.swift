import GRDB
import GRDBSQLite
import Synchronization

/// The writer connection's WAL size in frames, as SQLite reports it after
/// each commit through `sqlite3_wal_hook`.
///
/// The hook replaces SQLite's automatic checkpoint (which is itself a WAL
/// hook): ``Store/checkpointIfDue()`` checkpoints after the writer has
/// reported a commit, and the hook checkpoints inline only as a safety net,
/// at four times ``Store/checkpointFrames``.
final class WALFrameCount: Sendable {
    private let frames = Atomic<Int32>(0)

    /// Frames after the last commit (0 after a checkpoint by ``Store/checkpointIfDue()``).
    var value: Int32 {
        get { frames.load(ordering: .relaxed) }
        set { frames.store(newValue, ordering: .relaxed) }
    }

    /// Installs the hook on `db`, the store's one writer connection. The
    /// store keeps this object for as long as the connection is open.
    func install(on db: Database) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        sqlite3_wal_hook(db.sqliteConnection, { context, connection, name, frames in
            guard let context else { return SQLITE_OK }
            let count = Unmanaged<WALFrameCount>.fromOpaque(context).takeUnretainedValue()
            count.value = frames
            if frames >= 4 * Store.checkpointFrames {
                // What SQLite's automatic checkpoint does; its error is not
                // the commit's (the commit is already durable).
                _ = sqlite3_wal_checkpoint(connection, name)
            }
            return SQLITE_OK
        }, context)
    }
}
