import Foundation
import GRDB
@testable import OutaTimeStore
import Testing

/// The database file as opened: schema, durability settings, constraints.
@Suite struct StoreSchemaTests {
    static let allMigrations: Set<String> = ["v1", "v2-state-seq", "v3-event-tail", "v4-event-runs", "v5-state-at-and-meta",
                                                 "v6-command-keys"]

    @Test func migrationCreatesTheTables() throws {
        let temp = try TemporaryStore()
        let pool = temp.store.pool
        #expect(try pool.read { try StoreSchema.migrator.appliedIdentifiers($0) } == Self.allMigrations)
        #expect(try pool.read { try $0.columns(in: "channels") }.map(\.name)
                == ["name", "kind", "seq", "state", "created_at", "updated_at", "state_seq", "state_at"])
        #expect(try pool.read { try $0.tableExists("server_meta") })
        #expect(try pool.read { try $0.primaryKey("channels") }.columns == ["name"])
        #expect(try pool.read { try $0.tableExists("events") } == false, "replaced by event_log in v4")
        // The append-only tail and log: row ids only grow, so a batch fills its last page.
        for table in ["event_tail", "event_log"] {
            #expect(try pool.read { try $0.columns(in: table) }.map(\.name)
                    == ["id", "channel", "seq", "event", "data", "at"])
            #expect(try pool.read { try $0.foreignKeys(on: table) }.isEmpty)
        }
        #expect(try pool.read { try $0.primaryKey("event_runs") }.columns == ["channel", "first_seq"])
        #expect(try pool.read { try $0.columns(in: "event_runs") }.map(\.name)
                == ["channel", "first_seq", "last_seq", "first_id"])
        #expect(try pool.read { try $0.primaryKey("command_keys") }.columns == ["channel", "seq"])
        #expect(try pool.read { try $0.columns(in: "command_keys") }.map(\.name)
                == ["channel", "seq", "key", "action", "result", "at"])
    }

    @Test("a version 3 database's indexed log becomes runs with the same history")
    func aVersion3DatabaseMovesItsLogIntoRuns() throws {
        let temp = try TemporaryStore(leftBy: "v3-event-tail") { db in
            for (name, seq) in [("laps/a", 12), ("laps/b", 3)] {
                try db.execute(sql: """
                    INSERT INTO channels (name, kind, seq, state, state_seq, created_at, updated_at)
                    VALUES (?, 'laps', ?, '{}', ?, 'now', 'now')
                    """, arguments: [name, seq, seq])
            }
            // laps/a pruned up to 4: 5...12 in the indexed log; laps/b whole.
            for (name, seqs) in [("laps/a", 5...12), ("laps/b", 1...3)] {
                for seq in seqs {
                    try db.execute(sql: """
                        INSERT INTO events (channel, seq, event, data, at) VALUES (?, ?, 'tested', ?, 'at')
                        """, arguments: [name, seq, #"{"n":\#(seq)}"#])
                }
            }
        }
        let store = temp.store
        #expect(try store.history(channel: "laps/a", after: 0, limit: 100).map(\.seq) == Array(5...12))
        #expect(try store.history(channel: "laps/a", after: 9, limit: 2).map(\.data.text) == [#"{"n":10}"#, #"{"n":11}"#])
        #expect(try store.history(channel: "laps/b", after: 0, limit: 100).map(\.seq) == [1, 2, 3])
        #expect(try store.oldestRetainedSeq(channel: "laps/a") == 5)
        try store.apply([.event("laps/a", 13)])
        #expect(try store.history(channel: "laps/a", after: 11, limit: 100).map(\.seq) == [12, 13])
    }

    @Test("a version 4 database (the previous release) gets state_at from updated_at and an empty server_meta")
    func aVersion4DatabaseGetsStateTimes() throws {
        let temp = try TemporaryStore(leftBy: "v4-event-runs") { db in
            // A running timer list as the previous release stored it: its
            // whole state, live values as of its last write.
            try db.execute(sql: """
                INSERT INTO channels (name, kind, seq, state, state_seq, created_at, updated_at)
                VALUES ('timers/a', 'timers', 3, ?, 3, '2026-11-24T10:00:00Z', '2026-11-24T10:05:00Z')
                """, arguments: [#"{"timers":[{"id":1,"event":"e","location":"","remaining_s":55,"status":"running","viewers":1}]}"#])
        }
        let record = try #require(try temp.store.channel(named: "timers/a"))
        #expect(record.stateAt == "2026-11-24T10:05:00Z")
        #expect(record.seq == 3 && record.stateSeq == 3)
        #expect(try temp.store.loadChannels().map(\.stateAt) == ["2026-11-24T10:05:00Z"])
        #expect(try temp.store.meta("alive_until") == nil)
    }

    @Test func reopeningDoesNotMigrateAgain() throws {
        let temp = try TemporaryStore()
        try temp.store.apply([.createChannel(.fresh("laps/a"))])
        let store = try temp.reopen()
        #expect(try store.pool.read { try StoreSchema.migrator.appliedIdentifiers($0) } == Self.allMigrations)
        #expect(try store.loadChannels().count == 1)
    }

    @Test func aVersion1DatabaseGetsStateSeqEqualToSeq() throws {
        // A database written by the first release: schema v1 only.
        let temp = try TemporaryStore(leftBy: "v1") { db in
            try db.execute(sql: """
                INSERT INTO channels (name, kind, seq, state, created_at, updated_at)
                VALUES ('laps/a', 'laps', 7, '{"v":7}', 'now', 'now')
                """)
        }
        #expect(try temp.store.channel(named: "laps/a")
                == ChannelRecord(name: "laps/a", kind: "laps", seq: 7, state: #"{"v":7}"#, stateSeq: 7))
    }

    @Test func walAndFullSyncOnTheWriterAndTheReaders() throws {
        let temp = try TemporaryStore()
        let pool = temp.store.pool
        func pragma(_ name: String, write: Bool) throws -> String? {
            let sql = "PRAGMA \(name)"
            return write
                ? try pool.write { try String.fetchOne($0, sql: sql) }
                : try pool.read { try String.fetchOne($0, sql: sql) }
        }
        for write in [true, false] {
            #expect(try pragma("journal_mode", write: write) == "wal")
            #expect(try pragma("synchronous", write: write) == "2", "FULL is 2")
            #expect(try pragma("foreign_keys", write: write) == "1")
        }
        // The writer keeps the busy channels' log pages cached (folds, prunes).
        #expect(try pragma("cache_size", write: true) == "-\(Store.writerCacheKiB)")

        // A fold commits without a sync, and the writer is back to FULL after it.
        try temp.store.apply([.createChannel(.fresh("laps/a")), .event("laps/a", 1)], foldEvery: 100)
        try temp.store.foldTail(historyLimit: 10)
        #expect(try pragma("synchronous", write: true) == "2", "FULL again after a fold")
        #expect(try temp.store.history(channel: "laps/a", after: 0, limit: 10).map(\.seq) == [1])
    }

    @Test func createsTheParentFolder() throws {
        let temp = try TemporaryStore()
        let path = temp.folder.appendingPathComponent("a/b/c/outatime.sqlite").path
        let store = try Store(path: path)
        defer { try? store.close() }
        #expect(FileManager.default.fileExists(atPath: path))
        #expect(store.path == path)
    }
}

@Suite("server meta and state times")
struct StoreMetaTests {
    @Test("meta values are set, replaced and read back; unknown keys are nil")
    func metaValues() throws {
        let temp = try TemporaryStore()
        #expect(try temp.store.meta("alive_until") == nil)
        try temp.store.apply([.setMeta(key: "alive_until", value: "2026-11-25T12:00:00Z")])
        try temp.store.apply([.setMeta(key: "alive_until", value: "2026-11-25T12:00:01Z")])
        #expect(try temp.store.meta("alive_until") == "2026-11-25T12:00:01Z")
    }

    @Test("a stored state carries the moment it was stored; an append without a state keeps it")
    func stateAt() throws {
        let temp = try TemporaryStore()
        try temp.store.apply([.createChannel(ChannelRecord(name: "timers/t", kind: "timers", seq: 0, state: "{}"))])
        let created = try #require(try temp.store.channel(named: "timers/t")?.stateAt)
        #expect(ISO8601DateFormatter().date(from: created) != nil, "\(created)")
        try temp.store.apply([.appendEvents(channel: "timers/t", seq: 1, state: nil,
                                            events: [EventRecord(channel: "timers/t", seq: 1, event: "e", data: "{}", at: created)])])
        #expect(try temp.store.channel(named: "timers/t")?.stateAt == created)
    }
}
