import Foundation
import GRDB

extension Store {
    /// Applies `writes` in order in ONE transaction: all of them or none.
    ///
    /// New events go to the append-only `event_tail` first (every row of a
    /// batch lands on the same last page or two, where the indexed `events`
    /// table would dirty one page per channel the batch touches); the tail
    /// is moved into `events` — sorted, in the same transaction — whenever
    /// its row ids pass a multiple of `foldEvery` (with 1, the default, at
    /// once). Under 50 clients on 50 channels this cut the pages written per
    /// commit from about 45 to about 10 (docs/BENCHMARKS.md). Readers see
    /// both tables as one log.
    ///
    /// When `historyLimit` is given, every channel whose events are moved
    /// keeps only its newest `historyLimit` events in `events`, pruned in
    /// the same transaction. Seqs are consecutive, so that is a single range
    /// delete on the primary key per channel. Between folds a channel holds
    /// up to `foldEvery` events more than the limit.
    public func apply(_ writes: [StoreWrite], historyLimit: Int? = nil, foldEvery: Int = 1) throws {
        precondition(historyLimit.map { $0 >= 1 } ?? true, "historyLimit must be at least 1")
        precondition(foldEvery >= 1, "foldEvery must be at least 1")
        try pool.write { db in
            try Self.apply(writes, historyLimit: historyLimit, foldEvery: foldEvery, in: db)
        }
    }

    /// Deletes all but the newest `keepNewest` events of `channel`.
    public func prune(channel: String, keepNewest: Int) throws {
        precondition(keepNewest >= 0, "keepNewest must not be negative")
        try pool.write { db in
            try Self.foldTail(historyLimit: nil, in: db)
            try db.execute(
                sql: """
                    DELETE FROM events WHERE channel = ?
                    AND seq <= (SELECT MAX(seq) FROM events WHERE channel = ?) - ?
                    """,
                arguments: [channel, channel, keepNewest])
        }
    }

    static func apply(_ writes: [StoreWrite], historyLimit: Int?, foldEvery: Int = 1, in db: Database) throws {
        let now = Date().formatted(.iso8601)
        var tailRows: (first: Int64, last: Int64)?
        for write in writes {
            switch write {
            case .createChannel(let record):
                try db.cachedStatement(sql: """
                    INSERT INTO channels (name, kind, seq, state, state_seq, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """).execute(arguments: [record.name, record.kind, record.seq, record.state, record.stateSeq, now, now])

            case .appendEvents(let channel, let seq, let state, let events):
                let previous = seq - Int64(events.count)
                try validate(events, channel: channel, after: previous)
                // The seq condition turns a lost or duplicated write into an
                // error instead of a silent gap or overlap in the log.
                if let state {
                    try db.cachedStatement(sql: """
                        UPDATE channels SET seq = ?, state = ?, state_seq = ?, updated_at = ?
                        WHERE name = ? AND seq = ?
                        """).execute(arguments: [seq, state.text, seq, now, channel, previous])
                } else {
                    try db.cachedStatement(sql: """
                        UPDATE channels SET seq = ?, updated_at = ? WHERE name = ? AND seq = ?
                        """).execute(arguments: [seq, now, channel, previous])
                }
                if db.changesCount == 0 {
                    try explainMissedUpdate(channel: channel, expectedSeq: previous, in: db)
                }
                let insert = try db.cachedStatement(sql: """
                    INSERT INTO event_tail (channel, seq, event, data, at) VALUES (?, ?, ?, ?, ?)
                    """)
                for event in events {
                    try insert.execute(arguments: [channel, event.seq, event.event, event.data.text, event.at])
                    tailRows = (tailRows?.first ?? db.lastInsertedRowID, db.lastInsertedRowID)
                }

            case .saveState(let channel, let state):
                try db.cachedStatement(sql: "UPDATE channels SET state = ?, state_seq = seq, updated_at = ? WHERE name = ?")
                    .execute(arguments: [state.text, now, channel])
                if db.changesCount == 0 { throw StoreError.unknownChannel(channel) }
            }
        }
        // Row ids count up from 1 after each fold: fold when this batch's
        // rows passed a multiple of `foldEvery`.
        if let tailRows, tailRows.last / Int64(foldEvery) > (tailRows.first - 1) / Int64(foldEvery) {
            try foldTail(historyLimit: historyLimit, in: db)
        }
    }

    /// Moves every tail row into `events` and prunes the channels they
    /// belong to down to `historyLimit` events.
    static func foldTail(historyLimit: Int?, in db: Database) throws {
        let newest = try Row.fetchAll(db, sql: "SELECT channel, MAX(seq) AS seq FROM event_tail GROUP BY channel")
        guard !newest.isEmpty else { return }
        try db.execute(sql: """
            INSERT INTO events (channel, seq, event, data, at)
            SELECT channel, seq, event, data, at FROM event_tail ORDER BY channel, seq
            """)
        try db.execute(sql: "DELETE FROM event_tail")
        guard let historyLimit else { return }
        // Never the events after the stored state: loading needs them.
        let prune = try db.cachedStatement(sql: """
            DELETE FROM events WHERE channel = ? AND seq <= ?
            AND seq <= (SELECT state_seq FROM channels WHERE name = ?)
            """)
        for row in newest {
            let channel: String = row["channel"]
            let seq: Int64 = row["seq"]
            if seq > Int64(historyLimit) {
                try prune.execute(arguments: [channel, seq - Int64(historyLimit), channel])
            }
        }
    }

    private static func validate(_ events: [EventRecord], channel: String, after previous: Int64) throws {
        guard previous >= 0 else {
            throw StoreError.invalidEvents(channel: channel, reason: "more events than the new seq")
        }
        for (offset, event) in events.enumerated() {
            if event.channel != channel {
                throw StoreError.invalidEvents(
                    channel: channel, reason: "event \(event.seq) belongs to '\(event.channel)'")
            }
            if event.seq != previous + 1 + Int64(offset) {
                throw StoreError.invalidEvents(
                    channel: channel,
                    reason: "event seq \(event.seq) at position \(offset), expected \(previous + 1 + Int64(offset))")
            }
        }
    }

    /// Runs only on the error path, so the common append costs one UPDATE.
    private static func explainMissedUpdate(channel: String, expectedSeq: Int64, in db: Database) throws -> Never {
        if let stored = try Int64.fetchOne(db, sql: "SELECT seq FROM channels WHERE name = ?", arguments: [channel]) {
            throw StoreError.seqMismatch(channel: channel, expected: expectedSeq, stored: stored)
        }
        throw StoreError.unknownChannel(channel)
    }
}
