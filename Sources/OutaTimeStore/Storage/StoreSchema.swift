import GRDB

/// The database schema as an ordered list of migrations. Migrations are
/// append-only: a released one is never edited, a change is a new migration.
enum StoreSchema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            // `name` is the full "kind/name"; `kind` is repeated so that
            // `list kind:` needs no string parsing in SQL.
            try db.execute(sql: """
                CREATE TABLE channels (
                    name TEXT PRIMARY KEY NOT NULL,
                    kind TEXT NOT NULL,
                    seq INTEGER NOT NULL,
                    state TEXT NOT NULL,
                    created_at TEXT NOT NULL,
                    updated_at TEXT NOT NULL
                )
                """)
            // WITHOUT ROWID: the (channel, seq) key is the only access path
            // (history pages, pruning), so the rows live in that b-tree
            // directly instead of behind a rowid table plus an index.
            try db.execute(sql: """
                CREATE TABLE events (
                    channel TEXT NOT NULL REFERENCES channels(name),
                    seq INTEGER NOT NULL,
                    event TEXT NOT NULL,
                    data TEXT NOT NULL,
                    at TEXT NOT NULL,
                    PRIMARY KEY (channel, seq)
                ) WITHOUT ROWID
                """)
        }
        migrator.registerMigration("v2-state-seq") { db in
            // The seq the stored state is as of. A channel whose state is
            // stored only every so many events (lap stopwatches) is loaded
            // as that state plus the events after `state_seq`.
            try db.execute(sql: "ALTER TABLE channels ADD COLUMN state_seq INTEGER NOT NULL DEFAULT 0")
            try db.execute(sql: "UPDATE channels SET state_seq = seq")
        }
        migrator.registerMigration("v3-event-tail") { db in
            // New events are appended here (row ids only grow, so a batch
            // fills the last page) and moved into `events` in bulk; see
            // Store.apply(_:historyLimit:foldEvery:). Readers union both.
            // No foreign key: a row is written only after its channel's seq
            // was checked (Store.apply), and without one
            // emptying the tail at each fold is a truncation (a third of the
            // time it took with the key).
            try db.execute(sql: """
                CREATE TABLE event_tail (
                    id INTEGER PRIMARY KEY,
                    channel TEXT NOT NULL,
                    seq INTEGER NOT NULL,
                    event TEXT NOT NULL,
                    data TEXT NOT NULL,
                    at TEXT NOT NULL
                )
                """)
        }
        migrator.registerMigration("v4-event-runs") { db in
            // The indexed log becomes an append-only rowid table plus one
            // "run" per channel and fold: a channel's events moved by one
            // fold get consecutive row ids (they are inserted ordered by
            // channel and seq), so a run (first seq, last seq, first row id)
            // finds any of them by arithmetic. A fold appends at the end of
            // one table instead of inserting into the middle of a
            // `(channel, seq)` b-tree, and pruning deletes row-id ranges.
            // Benched on 8,192 events of 50 channels: 16 ms of SQL per fold
            // instead of 24 (docs/BENCHMARKS.md).
            try db.execute(sql: """
                CREATE TABLE event_log (
                    id INTEGER PRIMARY KEY,
                    channel TEXT NOT NULL,
                    seq INTEGER NOT NULL,
                    event TEXT NOT NULL,
                    data TEXT NOT NULL,
                    at TEXT NOT NULL
                )
                """)
            try db.execute(sql: """
                CREATE TABLE event_runs (
                    channel TEXT NOT NULL,
                    first_seq INTEGER NOT NULL,
                    last_seq INTEGER NOT NULL,
                    first_id INTEGER NOT NULL,
                    PRIMARY KEY (channel, first_seq)
                ) WITHOUT ROWID
                """)
            try db.execute(sql: """
                INSERT INTO event_log (channel, seq, event, data, at)
                SELECT channel, seq, event, data, at FROM events ORDER BY channel, seq
                """)
            // One run per stretch of consecutive seqs (a channel's events
            // are one stretch, as pruning only ever cut from the oldest).
            try db.execute(sql: """
                INSERT INTO event_runs (channel, first_seq, last_seq, first_id)
                SELECT channel, MIN(seq), MAX(seq), MIN(id) FROM (
                    SELECT channel, seq, id, seq - ROW_NUMBER() OVER (PARTITION BY channel ORDER BY seq) AS stretch
                    FROM event_log)
                GROUP BY channel, stretch
                """)
            try db.execute(sql: "DROP TABLE events")
        }
        migrator.registerMigration("v5-state-at-and-meta") { db in
            // When each channel's state was stored: live values in it (a
            // running countdown's remaining time) continue from there on
            // load. Older releases stored running lists at least every 5 s
            // and touched `updated_at` with each state, so it stands in.
            try db.execute(sql: "ALTER TABLE channels ADD COLUMN state_at TEXT")
            try db.execute(sql: "UPDATE channels SET state_at = updated_at")
            // The server's own values, such as the last moment it ran.
            try db.execute(sql: """
                CREATE TABLE server_meta (
                    key TEXT PRIMARY KEY NOT NULL,
                    value TEXT NOT NULL
                ) WITHOUT ROWID
                """)
        }
        migrator.registerMigration("v6-command-keys") { db in
            // Issue 27: the keyed commands (`idempotency_key`) of each
            // channel's kept events, so that a repeat after a restart is
            // still answered with the first outcome. A table of its own
            // rather than columns of the event tables: only keyed commands
            // write a row (the tail's bulk insert and the fold's copy stay as
            // they are), and a channel's keys load with one range read of
            // the (channel, seq) key. Pruned with the events (trimLog).
            try db.execute(sql: """
                CREATE TABLE command_keys (
                    channel TEXT NOT NULL,
                    seq INTEGER NOT NULL,
                    key TEXT NOT NULL,
                    action TEXT NOT NULL,
                    result TEXT,
                    at TEXT NOT NULL,
                    PRIMARY KEY (channel, seq)
                ) WITHOUT ROWID
                """)
        }
        return migrator
    }
}
