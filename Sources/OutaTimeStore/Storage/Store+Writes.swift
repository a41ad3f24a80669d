import Foundation
import GRDB
import GRDBSQLite

extension Store {
    /// Applies `writes` in order in ONE transaction: all of them or none.
    ///
    /// New events go to the append-only `event_tail` first (every row of a
    /// batch lands on the same last page or two, where an index on
    /// `(channel, seq)` would dirty one page per channel the batch touches);
    /// the tail is moved into the indexed log (`event_log` and its
    /// `event_runs`) — sorted, in the same transaction — whenever
    /// its row ids pass a multiple of `foldEvery` (with 1, the default, at
    /// once). Under 50 clients on 50 channels this cut the pages written per
    /// commit from about 45 to about 10 (docs/BENCHMARKS.md). Readers see
    /// both tables as one log.
    ///
    /// An append without a state writes the tail only: the channel's row
    /// (its `seq`) catches up at the next fold, and the seq check that
    /// refuses a gap or overlap runs against the seqs this store wrote last
    /// (asked from the database once per channel). That took the seven
    /// pages of the `channels` table out of almost every commit.
    ///
    /// When `historyLimit` is given, every channel whose events are moved
    /// keeps only its newest `historyLimit` events in the log, pruned in the
    /// same transaction: row-id range deletes of its oldest runs. Between
    /// folds a channel holds up to `foldEvery` events more than the limit.
    ///
    /// With `foldLater`, a fold that is due is not made here: the result
    /// says so, and the caller runs ``foldTail(historyLimit:)`` once it has
    /// reported the commit (the group commit writer does).
    ///
    /// - Returns: whether a fold is due and was left to the caller.
    @discardableResult
    public func apply(_ writes: some Collection<StoreWrite>, historyLimit: Int? = nil, foldEvery: Int = 1,
                      foldLater: Bool = false) throws -> Bool {
        precondition(historyLimit.map { $0 >= 1 } ?? true, "historyLimit must be at least 1")
        precondition(foldEvery >= 1, "foldEvery must be at least 1")
        try checkFile()
        // Holding the locks for the transaction costs nothing: GRDB
        // serialises writes on one connection anyway.
        return try knownSeqs.withLock { known in
            try tailSeqs.withLock { tail in
                // Updated in place, one dictionary access per write (hashing
                // the channel names was ≈ 5,000 instructions per event with a
                // separate dictionary merged after the commit); a failed
                // transaction puts back everything it changed or learned.
                var undo: [(channel: String, seq: Int64?)] = []
                var tailUndo: [(channel: String, seqs: ClosedRange<Int64>?)] = []
                var foldDue = false
                var foldedHere = false
                var bytes = 0
                do {
                    try pool.write { db in
                        bytes = 0
                        foldDue = try Self.apply(writes, foldEvery: foldEvery, in: db, textBytes: &bytes) { channel, newSeq in
                            try Self.exchangeSeq(&known[channel, default: Self.unknownSeq], of: channel, for: newSeq,
                                                 undo: &undo, in: db)
                        } appended: { channel, seqs in
                            // One hash of the name when the channel is in the tail already.
                            if let index = tail.index(forKey: channel) {
                                let before = tail.values[index]
                                tailUndo.append((channel, before))
                                tail.values[index] = before.lowerBound...seqs.upperBound
                            } else {
                                tailUndo.append((channel, nil))
                                tail[channel] = seqs
                            }
                        }
                        if foldDue && !foldLater {
                            try Self.foldTail(historyLimit: historyLimit, tail: tail, in: db)
                            foldedHere = true
                        }
                    }
                } catch {
                    for change in undo.reversed() { known[change.channel] = change.seq }
                    for change in tailUndo.reversed() { tail[change.channel] = change.seqs }
                    throw error
                }
                if foldedHere { tail = [:] }
                textBytes.withLock { $0 += bytes }
                // A dropped channel's seq is not kept (a name used once and
                // forgotten must not stay in memory); a later creation reads it.
                for case .dropEmptyChannel(let channel) in writes { known[channel] = nil }
                return foldDue && foldLater
            }
        }
    }

    /// Marks a channel whose seq the store has not read yet.
    private static let unknownSeq: Int64 = -1

    /// The channel's seq before this write, read from the database the
    /// first time; stores `newSeq` in its place when given.
    private static func exchangeSeq(
        _ slot: inout Int64, of channel: String, for newSeq: Int64?,
        undo: inout [(channel: String, seq: Int64?)], in db: Database
    ) throws -> Int64 {
        if slot == unknownSeq {
            // Forgotten again if the transaction fails, lookup included.
            undo.append((channel, nil))
            slot = try seq(of: channel, in: db)
        }
        let previous = slot
        if let newSeq {
            undo.append((channel, previous))
            slot = newSeq
        }
        return previous
    }

    /// Moves the tail into the indexed log and prunes (see
    /// ``apply(_:historyLimit:foldEvery:foldLater:)``) in a transaction of
    /// its own, committed without an fsync.
    ///
    /// Why no fsync is safe: a fold changes where events are kept, not which
    /// ones, and it is atomic. Lost in a crash, it is rolled back whole (the
    /// events are still in the tail) and made again; the next durable commit
    /// syncs the log file, fold included. Why: a fold writes a few hundred
    /// pages, and its sync made the commands waiting behind it wait tens of
    /// milliseconds more.
    public func foldTail(historyLimit: Int?) throws {
        precondition(historyLimit.map { $0 >= 1 } ?? true, "historyLimit must be at least 1")
        try tailSeqs.withLock { tail in
            try pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
                let folded = Result {
                    try db.inTransaction { try Self.foldTail(historyLimit: historyLimit, tail: tail, in: db); return .commit }
                }
                try db.execute(sql: Self.durableSync)
                try folded.get()
            }
            tail = [:]
        }
    }

    /// Deletes all but the newest `keepNewest` events of `channel`.
    public func prune(channel: String, keepNewest: Int) throws {
        precondition(keepNewest >= 0, "keepNewest must not be negative")
        try tailSeqs.withLock { tail in
            try pool.write { db in
                try Self.foldTail(historyLimit: nil, tail: tail, in: db)
                try trim(db)
            }
            tail = [:]
        }
        func trim(_ db: Database) throws {
            guard let newest = try Int64.fetchOne(
                db, sql: "SELECT MAX(last_seq) FROM event_runs WHERE channel = ?", arguments: [channel])
            else { return }
            try Self.trimLog(of: channel, through: newest - Int64(keepNewest), in: db)
        }
    }

    /// Applies `writes` inside the caller's transaction.
    ///
    /// - Parameters:
    ///   - exchangeSeq: given a channel and its seq after this write (nil
    ///     for none), returns its seq before it (the store's, or an earlier
    ///     write's of the same batch); throws ``StoreError/unknownChannel(_:)``
    ///   for a channel never created.
    ///   - appended: told the seqs of each channel's events put in the tail.
    /// - Returns: whether a fold is due (left to the caller).
    static func apply(
        _ writes: some Collection<StoreWrite>, foldEvery: Int = 1, in db: Database, textBytes: inout Int,
        exchangeSeq: (String, Int64?) throws -> Int64, appended: (String, ClosedRange<Int64>) -> Void
    ) throws -> Bool {
        // Formatted only when a row is written (a creation, a state, not a
        // plain append): about 13,000 instructions, once per commit before.
        lazy var now = Date().formatted(.iso8601)
        // Each write's events, as the arrays they came in (one retain each):
        // copying every record into one array, and the group's writes into
        // another, was 7 % of the writer's instructions under callgrind
        // (docs/BENCHMARKS.md, session 10).
        var tail: [[EventRecord]] = []
        for write in writes {
            switch write {
            case .createChannel(let record):
                try db.cachedStatement(sql: """
                    INSERT INTO channels (name, kind, seq, state, state_seq, created_at, updated_at, state_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """).execute(arguments: [record.name, record.kind, record.seq, record.state, record.stateSeq, now, now, now])
                _ = try exchangeSeq(record.name, record.seq)

            case .appendEvents(let channel, let seq, let state, let events):
                let previous = seq - Int64(events.count)
                try validate(events, channel: channel, after: previous)
                // A lost or duplicated write becomes an error instead of a
                // silent gap or overlap in the log.
                let stored = try exchangeSeq(channel, seq)
                guard stored == previous else {
                    throw StoreError.seqMismatch(channel: channel, expected: previous, stored: stored)
                }
                // The channel's row is written only with a state: its `seq`
                // catches up at the next fold (see ``seq(of:in:)``).
                if let state {
                    let text = state.text
                    textBytes += text.utf8.count
                    try db.cachedStatement(sql: """
                        UPDATE channels SET seq = ?, state = ?, state_seq = ?, updated_at = ?, state_at = ? WHERE name = ?
                        """).execute(arguments: [seq, text, seq, now, now, channel])
                }
                tail.append(events)
                if let first = events.first { appended(channel, first.seq...seq) }
                // Keyed commands only (most events have none): one row each.
                for event in events {
                    guard let command = event.command else { continue }
                    try db.cachedStatement(sql: """
                        INSERT OR REPLACE INTO command_keys (channel, seq, key, action, result, at) VALUES (?, ?, ?, ?, ?, ?)
                        """).execute(arguments: [channel, event.seq, command.key, command.action, command.result, event.at])
                }

            case .saveState(let channel, let state):
                let seq = try exchangeSeq(channel, nil)
                let text = state.text
                textBytes += text.utf8.count
                try db.cachedStatement(sql: "UPDATE channels SET seq = ?, state = ?, state_seq = ?, updated_at = ?, state_at = ? WHERE name = ?")
                    .execute(arguments: [seq, text, seq, now, now, channel])

            case .setMeta(let key, let value):
                try db.cachedStatement(sql: "INSERT OR REPLACE INTO server_meta (key, value) VALUES (?, ?)")
                    .execute(arguments: [key, value])

            case .dropEmptyChannel(let channel):
                // Seq 0 in the row and the tail: no event anywhere to lose.
                let seq = try exchangeSeq(channel, nil)
                guard seq == 0 else { throw StoreError.notEmpty(channel: channel, seq: seq) }
                try db.cachedStatement(sql: "DELETE FROM channels WHERE name = ?").execute(arguments: [channel])
            }
        }
        // Row ids count up from 1 after each fold: fold when this batch's
        // rows passed a multiple of `foldEvery`.
        guard let tailRows = try appendToTail(tail, in: db, textBytes: &textBytes) else { return false }
        return tailRows.last / Int64(foldEvery) > (tailRows.first - 1) / Int64(foldEvery)
    }

    /// Rows per INSERT into the tail: one statement for many rows, because
    /// each execution has a fixed cost (SQLite's statement start and end).
    static let tailRowsPerInsert = 32

    /// `INSERT INTO event_tail … VALUES (…), (…)` for 1 to
    /// ``tailRowsPerInsert`` rows.
    private static let tailInserts: [String] = (1...tailRowsPerInsert).map { rows in
        "INSERT INTO event_tail (channel, seq, event, data, at) VALUES "
            + repeatElement("(?, ?, ?, ?, ?)", count: rows).joined(separator: ", ")
    }

    /// Appends the events of `groups` to the tail in order; returns the row
    /// ids they got (consecutive: each new row id is the largest plus one),
    /// or nil for none.
    ///
    /// The one statement of the project bound with the SQLite C API, on
    /// GRDB's cached statement inside GRDB's transaction: the values are
    /// plain strings and integers, and `execute(arguments:)` boxed each into
    /// a `DatabaseValue` and validated the list — about 1,000 instructions
    /// per value under callgrind, the largest part of appending an event.
    private static func appendToTail(_ groups: [[EventRecord]], in db: Database,
                                     textBytes: inout Int) throws -> (first: Int64, last: Int64)? {
        // One statement's rows (up to ``tailRowsPerInsert``): their texts in
        // one buffer, bound in place (`SQLITE_STATIC`) and alive until its
        // step: SQLite copying each text (`SQLITE_TRANSIENT`, a malloc and a
        // copy) was about a quarter of appending an event under callgrind.
        // `spans` holds the byte ranges of each row's four texts in `texts`,
        // four a row; the buffers are reused from one statement to the next.
        var texts: [UInt8] = []
        var spans: [Range<Int>] = []
        var seqs: [Int64] = []
        spans.reserveCapacity(tailRowsPerInsert * 4)
        seqs.reserveCapacity(tailRowsPerInsert)
        var written = 0
        func add(_ text: String) {
            let start = texts.count
            texts.append(contentsOf: text.utf8)
            spans.append(start..<texts.count)
        }
        func insertRows() throws {
            let rows = seqs.count
            let statement = try db.cachedStatement(sql: tailInserts[rows - 1])
            let handle = statement.sqliteStatement
            sqlite3_reset(handle)
            let code = texts.withUnsafeBufferPointer { buffer -> Int32 in
                let base = UnsafeRawPointer(buffer.baseAddress ?? UnsafePointer(bitPattern: 1)!)
                func bind(_ column: Int32, _ span: Range<Int>) {
                    _ = sqlite3_bind_text(handle, column, (base + span.lowerBound).assumingMemoryBound(to: CChar.self),
                                          Int32(span.count), sqliteStatic)
                }
                // Columns (channel, seq, event, data, at), five a row.
                for row in 0..<rows {
                    let column = Int32(row * 5), text = row * 4
                    bind(column + 1, spans[text])
                    sqlite3_bind_int64(handle, column + 2, seqs[row])
                    bind(column + 3, spans[text + 1])
                    bind(column + 4, spans[text + 2])
                    bind(column + 5, spans[text + 3])
                }
                let code = sqlite3_step(handle)
                // Reset and unbind while the buffer is still ours.
                sqlite3_reset(handle)
                sqlite3_clear_bindings(handle)
                return code
            }
            guard code == SQLITE_DONE else {
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: db.lastErrorMessage, sql: statement.sql)
            }
            written += rows
            texts.removeAll(keepingCapacity: true)
            spans.removeAll(keepingCapacity: true)
            seqs.removeAll(keepingCapacity: true)
        }
        for event in groups.joined() {
            let data = event.data.text
            textBytes += data.utf8.count
            add(event.channel)
            add(event.event)
            add(data)
            add(event.at)
            seqs.append(event.seq)
            if seqs.count == tailRowsPerInsert { try insertRows() }
        }
        if !seqs.isEmpty { try insertRows() }
        guard written > 0 else { return nil }
        return (db.lastInsertedRowID - Int64(written) + 1, db.lastInsertedRowID)
    }

    /// A channel's seq as stored: its row's `seq` (exact as of the last fold
    /// or stored state) or its newest event in the tail, whichever is larger.
    /// Scans the tail (at most `foldEvery` rows); the writer asks once per
    /// channel and then remembers.
    static func seq(of channel: String, in db: Database) throws -> Int64 {
        guard let seq = try Int64.fetchOne(db, sql: """
            SELECT MAX(seq, COALESCE((SELECT MAX(seq) FROM event_tail WHERE channel = ?1), 0))
            FROM channels WHERE name = ?1
            """, arguments: [channel])
        else { throw StoreError.unknownChannel(channel) }
        return seq
    }

    /// Moves the tail into the indexed log (`event_log`, one run per channel
    /// in `event_runs`), brings the `seq` of the channels it holds up to
    /// date and prunes those channels down to `historyLimit` events.
    ///
    /// Only the events that survive the pruning are copied: a busy channel's
    /// tail rows older than its newest `historyLimit` are dropped with the
    /// tail instead of being moved and deleted again. One connection
    /// pipelining to one channel folds 8,192 events of which 1,000 stay, so
    /// this copies an eighth of what it did (docs/BENCHMARKS.md, session 9).
    static func foldTail(historyLimit: Int?, tail: [String: ClosedRange<Int64>]?, in db: Database) throws {
        // Each channel's tail seqs, ordered as the INSERT below orders the
        // rows (SQLite's BINARY collation: bytes), so that each channel's
        // first row id follows from the counts before it. The writer knows
        // them (reading them back took a third of a fold under callgrind);
        // only the first fold after opening asks the tail.
        let ranges = try tail.map { $0.map { (channel: $0.key, seqs: $0.value) } } ?? tailRanges(in: db)
        guard !ranges.isEmpty else { return }
        let stateSeq = try db.cachedStatement(sql: "SELECT state_seq FROM channels WHERE name = ?")
        var groups: [FoldGroup] = []
        groups.reserveCapacity(ranges.count)
        for (channel, seqs) in ranges {
            // Events up to `cutoff` are pruned: all but the newest
            // `historyLimit`, and never one after the stored state (loading
            // replays those).
            var cutoff: Int64 = 0
            if let historyLimit, seqs.upperBound > Int64(historyLimit) {
                let stored = try Int64.fetchOne(stateSeq, arguments: [channel]) ?? 0
                cutoff = min(seqs.upperBound - Int64(historyLimit), stored)
            }
            groups.append(FoldGroup(channel: channel, seqs: seqs, cutoff: cutoff))
        }
        groups.sort { $0.channel.utf8.lexicographicallyPrecedes($1.channel.utf8) }
        let before = try Int64.fetchOne(db, sql: "SELECT COALESCE(MAX(id), 0) FROM event_log") ?? 0
        if !groups.contains(where: \.dropsSome) {
            // Every tail row is kept (the usual case with many busy channels):
            // a plain copy, without the join below.
            try db.execute(sql: """
                INSERT INTO event_log (channel, seq, event, data, at)
                SELECT channel, seq, event, data, at FROM event_tail ORDER BY channel, seq
                """)
        } else {
            // Each dropping channel's first kept seq, joined to the tail by the copy.
            try db.execute(sql: """
                CREATE TEMP TABLE IF NOT EXISTS fold_keep (channel TEXT PRIMARY KEY NOT NULL, keep_from INTEGER NOT NULL) WITHOUT ROWID
                """)
            try db.execute(sql: "DELETE FROM temp.fold_keep")
            let keep = try db.cachedStatement(sql: "INSERT INTO temp.fold_keep (channel, keep_from) VALUES (?, ?)")
            for group in groups where group.dropsSome {
                try keep.execute(arguments: [group.channel, group.keepFrom])
            }
            try db.execute(sql: """
                INSERT INTO event_log (channel, seq, event, data, at)
                SELECT t.channel, t.seq, t.event, t.data, t.at
                FROM event_tail t LEFT JOIN temp.fold_keep k ON k.channel = t.channel
                WHERE t.seq >= COALESCE(k.keep_from, 0)
                ORDER BY t.channel, t.seq
                """)
        }
        // The tail held exactly the seqs known (each append's seq check
        // makes a channel's tail rows consecutive); anything else would
        // break the run arithmetic below, so the fold is refused.
        let copied = groups.reduce(0) { $0 + $1.keptCount }
        guard Int64(db.changesCount) == copied else {
            throw StoreError.invalidEvents(
                channel: groups.first?.channel ?? "",
                reason: "the fold copied \(db.changesCount) tail events, \(copied) expected")
        }
        try db.execute(sql: "DELETE FROM event_tail")
        let addRun = try db.cachedStatement(sql: """
            INSERT INTO event_runs (channel, first_seq, last_seq, first_id) VALUES (?, ?, ?, ?)
            """)
        // The rows' seqs catch up with their logs (appends leave them alone),
        // and the logged events up to the cutoff go.
        let catchUp = try db.cachedStatement(sql: "UPDATE channels SET seq = ?, updated_at = ? WHERE name = ? AND seq < ?")
        let now = Date().formatted(.iso8601)
        var nextID = before + 1
        for group in groups {
            let last = group.seqs.upperBound
            if group.keptCount > 0 {
                try addRun.execute(arguments: [group.channel, group.keepFrom, last, nextID])
                nextID += group.keptCount
            }
            try catchUp.execute(arguments: [last, now, group.channel, last])
            if group.cutoff > 0 {
                try trimLog(of: group.channel, through: group.cutoff, in: db)
            }
        }
    }

    /// One channel's part of a fold: its seqs in the tail and the seq up to
    /// which its events are pruned.
    private struct FoldGroup {
        var channel: String
        var seqs: ClosedRange<Int64>
        var cutoff: Int64
        /// Its first tail event that is kept.
        var keepFrom: Int64 { max(seqs.lowerBound, cutoff + 1) }
        /// How many of its tail events are kept (copied into the log).
        var keptCount: Int64 { max(0, seqs.upperBound - keepFrom + 1) }
        /// Whether some of its tail events are pruned without being copied.
        var dropsSome: Bool { keepFrom > seqs.lowerBound }
    }

    /// Each channel's seqs in the tail, read from it. A channel's tail rows
    /// are consecutive seqs (the seq check of every append).
    private static func tailRanges(in db: Database) throws -> [(channel: String, seqs: ClosedRange<Int64>)] {
        try Row.fetchAll(db, sql: """
            SELECT channel, MIN(seq) AS first, MAX(seq) AS last, COUNT(*) AS count FROM event_tail GROUP BY channel
            """).map { row in
            let channel: String = row["channel"]
            let first: Int64 = row["first"]
            let last: Int64 = row["last"]
            let count: Int64 = row["count"]
            guard count == last - first + 1 else {
                throw StoreError.invalidEvents(channel: channel, reason: "the tail holds \(count) events for seqs \(first)…\(last)")
            }
            return (channel, first...last)
        }
    }

    /// Deletes `channel`'s logged events with seq at most `cutoff`: whole
    /// runs as row-id ranges, and the front of the run the cutoff falls in.
    static func trimLog(of channel: String, through cutoff: Int64, in db: Database) throws {
        let runs = try Row.fetchAll(
            db.cachedStatement(sql: """
                SELECT first_seq, last_seq, first_id FROM event_runs WHERE channel = ? AND first_seq <= ?
                """),
            arguments: [channel, cutoff])
        let deleteRows = try db.cachedStatement(sql: "DELETE FROM event_log WHERE id BETWEEN ? AND ?")
        // The keyed commands of pruned events go with them (a range of the
        // table's key; usually nothing to delete).
        try db.cachedStatement(sql: "DELETE FROM command_keys WHERE channel = ? AND seq <= ?")
            .execute(arguments: [channel, cutoff])
        for run in runs {
            let first: Int64 = run["first_seq"]
            let last: Int64 = run["last_seq"]
            let firstID: Int64 = run["first_id"]
            if last <= cutoff {
                try deleteRows.execute(arguments: [firstID, firstID + last - first])
                try db.cachedStatement(sql: "DELETE FROM event_runs WHERE channel = ? AND first_seq = ?")
                    .execute(arguments: [channel, first])
            } else {
                try deleteRows.execute(arguments: [firstID, firstID + cutoff - first])
                try db.cachedStatement(sql: """
                    UPDATE event_runs SET first_seq = ?, first_id = ? WHERE channel = ? AND first_seq = ?
                    """).execute(arguments: [cutoff + 1, firstID + cutoff + 1 - first, channel, first])
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
}

/// SQLite's `SQLITE_STATIC`: the value is not copied and stays valid until
/// the statement is reset. (A C macro that Swift does not import.)
private let sqliteStatic = unsafeBitCast(OpaquePointer(bitPattern: 0), to: sqlite3_destructor_type.self)
