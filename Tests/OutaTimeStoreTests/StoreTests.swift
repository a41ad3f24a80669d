import Foundation
@testable import OutaTimeStore
import Testing

/// Synchronous reads and writes against a real SQLite file.
@Suite struct StoreTests {
    @Test func createdChannelIsLoaded() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        try store.apply([.createChannel(.fresh("laps/morning")), .createChannel(.fresh("delorean/dmc12"))])
        #expect(try store.loadChannels() == [.fresh("delorean/dmc12"), .fresh("laps/morning")])
        #expect(try store.channel(named: "laps/morning") == .fresh("laps/morning"))
        #expect(try store.channel(named: "laps/evening") == nil)
    }

    @Test func creatingAnExistingChannelFails() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        try store.apply([.createChannel(.fresh("timers/a"))])
        #expect(throws: (any Error).self) { try store.apply([.createChannel(.fresh("timers/a"))]) }
    }

    @Test func appendEventsUpdatesSeqAndState() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        try store.apply([.createChannel(.fresh("laps/a")), .event("laps/a", 1)])
        try store.apply([.events("laps/a", from: 2, to: 4)])
        let channel = try #require(try store.channel(named: "laps/a"))
        #expect(channel.seq == 4)
        #expect(channel.state == #"{"v":4}"#)
        #expect(try store.history(channel: "laps/a", after: 0, limit: 10).map(\.seq) == [1, 2, 3, 4])
        #expect(try store.oldestRetainedSeq(channel: "laps/a") == 1)
    }

    @Test func historyPagesWithAfterAndLimit() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        try store.apply([.createChannel(.fresh("laps/a")), .events("laps/a", from: 1, to: 10),
                         .createChannel(.fresh("laps/b")), .events("laps/b", from: 1, to: 3)])
        let first = try store.history(channel: "laps/a", after: 0, limit: 4)
        #expect(first.map(\.seq) == [1, 2, 3, 4])
        #expect(first[0] == EventRecord(channel: "laps/a", seq: 1, event: "tested",
                                        data: #"{"n":1}"#, at: "2024-01-01T00:00:00Z"))
        #expect(try store.history(channel: "laps/a", after: 4, limit: 4).map(\.seq) == [5, 6, 7, 8])
        #expect(try store.history(channel: "laps/a", after: 8, limit: 4).map(\.seq) == [9, 10])
        #expect(try store.history(channel: "laps/a", after: 10, limit: 4).isEmpty)
        #expect(try store.history(channel: "laps/a", after: 0, limit: 0).isEmpty)
        #expect(try store.history(channel: "laps/b", after: 0, limit: 100).map(\.seq) == [1, 2, 3])
        #expect(try store.history(channel: "laps/none", after: 0, limit: 100).isEmpty)
        // `through` stops at a seq, in the tail and in the indexed log alike.
        #expect(try store.history(channel: "laps/a", after: 2, through: 6, limit: 100).map(\.seq) == [3, 4, 5, 6])
        try store.apply([.events("laps/a", from: 11, to: 12)], foldEvery: 1_000)
        #expect(try store.history(channel: "laps/a", after: 8, through: 11, limit: 100).map(\.seq) == [9, 10, 11])
        #expect(try store.history(channel: "laps/a", after: 8, through: 8, limit: 100).isEmpty)
    }

    @Test func aBatchIsOneTransaction() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        #expect(throws: StoreError.unknownChannel("laps/ghost")) {
            try store.apply([.createChannel(.fresh("laps/a")), .event("laps/a", 1), .event("laps/ghost", 1)])
        }
        #expect(try store.loadChannels().isEmpty)
        #expect(try store.history(channel: "laps/a", after: 0, limit: 10).isEmpty)
        // Nothing of the failed batch is remembered, the unknown name included.
        #expect(store.knownSeqs.withLock { $0.isEmpty })
    }

    @Test func appendRefusesAGapOrAReplay() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        try store.apply([.createChannel(.fresh("laps/a")), .event("laps/a", 1)])
        #expect(throws: StoreError.seqMismatch(channel: "laps/a", expected: 2, stored: 1)) {
            try store.apply([.event("laps/a", 3)])
        }
        #expect(throws: StoreError.seqMismatch(channel: "laps/a", expected: 0, stored: 1)) {
            try store.apply([.event("laps/a", 1)])
        }
        #expect(try store.channel(named: "laps/a")?.seq == 1)
    }

    @Test func appendRefusesMisnumberedEvents() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        try store.apply([.createChannel(.fresh("laps/a"))])
        let event = EventRecord(channel: "laps/a", seq: 2, event: "x", data: "{}", at: "2024-01-01T00:00:00Z")
        #expect(throws: StoreError.self) {
            try store.apply([.appendEvents(channel: "laps/a", seq: 1, state: "{}", events: [event])])
        }
        let foreign = EventRecord(channel: "laps/b", seq: 1, event: "x", data: "{}", at: "2024-01-01T00:00:00Z")
        #expect(throws: StoreError.self) {
            try store.apply([.appendEvents(channel: "laps/a", seq: 1, state: "{}", events: [foreign])])
        }
    }

    @Test func saveStateKeepsSeq() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        try store.apply([.createChannel(.fresh("timers/a")), .event("timers/a", 1)])
        try store.apply([.saveState(channel: "timers/a", state: #"{"checkpoint":true}"#)])
        #expect(try store.channel(named: "timers/a")
                == ChannelRecord(name: "timers/a", kind: "timers", seq: 1, state: #"{"checkpoint":true}"#))
        #expect(throws: StoreError.unknownChannel("timers/none")) {
            try store.apply([.saveState(channel: "timers/none", state: "{}")])
        }
    }

    @Test func appendWithoutStateLeavesTheStoredStateAndItsSeq() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        try store.apply([.createChannel(.fresh("laps/a")), .event("laps/a", 1)])
        for seq in Int64(2)...4 {
            try store.apply([.appendEvents(channel: "laps/a", seq: seq, state: nil, events: [
                EventRecord(channel: "laps/a", seq: seq, event: "tested", data: #"{"n":\#(seq)}"#, at: "2024-01-01T00:00:00Z"),
            ])])
        }
        #expect(try store.channel(named: "laps/a")
                == ChannelRecord(name: "laps/a", kind: "laps", seq: 4, state: #"{"v":1}"#, stateSeq: 1))
        // A checkpoint stores the state as of the current seq.
        try store.apply([.saveState(channel: "laps/a", state: #"{"v":4}"#)])
        #expect(try store.channel(named: "laps/a")?.stateSeq == 4)
    }

    @Test func pruningNeverRemovesEventsAfterTheStoredState() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        try store.apply([.createChannel(.fresh("laps/a")), .event("laps/a", 1)])
        for seq in Int64(2)...10 {
            try store.apply([.appendEvents(channel: "laps/a", seq: seq, state: nil, events: [
                EventRecord(channel: "laps/a", seq: seq, event: "tested", data: "{}", at: "2024-01-01T00:00:00Z"),
            ])], historyLimit: 3)
        }
        // The limit alone would keep 8...10; the state is as of 1, so 2...10 stay.
        #expect(try store.history(channel: "laps/a", after: 0, limit: 100).map(\.seq) == Array(2...10))
        try store.apply([.event("laps/a", 11)], historyLimit: 3)
        #expect(try store.history(channel: "laps/a", after: 0, limit: 100).map(\.seq) == [9, 10, 11])
    }

    @Test(arguments: [1, 5, 12, 50])
    func pruningKeepsExactlyTheNewest(limit: Int) throws {
        let temp = try TemporaryStore()
        let store = temp.store
        try store.apply([.createChannel(.fresh("laps/a")), .createChannel(.fresh("laps/b")),
                         .events("laps/b", from: 1, to: 20)])
        // Appended one by one, pruning as it goes, then in a multi-event write.
        for seq in Int64(1)...12 {
            try store.apply([.event("laps/a", seq)], historyLimit: limit)
        }
        try store.apply([.events("laps/a", from: 13, to: 15)], historyLimit: limit)
        let kept = try store.history(channel: "laps/a", after: 0, limit: 1_000).map(\.seq)
        let expected = Array(max(1, 15 - Int64(limit) + 1)...15)
        #expect(kept == expected)
        #expect(try store.oldestRetainedSeq(channel: "laps/a") == expected.first)
        // Untouched channels keep everything.
        #expect(try store.history(channel: "laps/b", after: 0, limit: 1_000).count == 20)
    }

    @Test("foldEvery: new events wait in the tail, readable; a fold moves them and prunes to the limit", arguments: [4, 16])
    func foldingInSteps(every: Int) throws {
        let temp = try TemporaryStore()
        let store = temp.store
        try store.apply([.createChannel(.fresh("laps/a")), .createChannel(.fresh("laps/b"))])
        let limit = 10
        for seq in Int64(1)...60 {
            // Another channel's row in the same batches: folds count rows, not channels.
            try store.apply([.event("laps/a", seq)], historyLimit: limit, foldEvery: every)
            let kept = try store.history(channel: "laps/a", after: 0, limit: 1_000).map(\.seq)
            // Always the newest `limit` at least, and at most `every` more.
            #expect(kept.last == seq && kept.count >= min(Int(seq), limit), "after \(seq): \(kept)")
            #expect(kept.count <= limit + every, "after \(seq): \(kept.count) kept")
            #expect(try store.oldestRetainedSeq(channel: "laps/a") == kept.first)
            let tail = try store.pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM event_tail") }
            #expect(tail == Int(seq) % every, "after \(seq): \(tail ?? -1) rows in the tail")
            if seq % Int64(every) == 0 && seq > Int64(limit) {
                #expect(kept == Array((seq - Int64(limit) + 1)...seq), "pruned exactly at the fold after \(seq)")
            }
        }
        // A multi-event write whose rows pass a multiple folds too, and the
        // other channel's events stay whole.
        try store.apply([.events("laps/a", from: 61, to: 70), .events("laps/b", from: 1, to: 3)],
                        historyLimit: limit, foldEvery: every)
        #expect(try store.history(channel: "laps/a", after: 0, limit: 1_000).map(\.seq) == Array(61...70))
        #expect(try store.history(channel: "laps/b", after: 0, limit: 1_000).map(\.seq) == [1, 2, 3])
        #expect(try store.history(channel: "laps/a", after: 65, limit: 2).map(\.seq) == [66, 67])
    }

    @Test("a fold copies only the events the pruning keeps: the newest `limit`, and those after the stored state")
    func foldCopiesOnlySurvivors() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        try store.apply([.createChannel(.fresh("laps/a")), .createChannel(.fresh("laps/b")),
                         .createChannel(.fresh("laps/c"))], foldEvery: 1_000)
        // a: 100 events with states, limit 10: 10 survive. b: its state is as
        // of 30, so 31…100 survive (loading replays them). c: 5, all survive.
        try store.apply([.events("laps/a", from: 1, to: 100), .events("laps/b", from: 1, to: 30),
                         .stateless("laps/c", 1)], foldEvery: 1_000)
        let withoutState = (31...100).map { StoreWrite.stateless("laps/b", Int64($0)) }
        try store.apply(withoutState + (2...5).map { .stateless("laps/c", Int64($0)) }, foldEvery: 1_000)
        try store.foldTail(historyLimit: 10)

        #expect(try store.history(channel: "laps/a", after: 0, limit: 1_000).map(\.seq) == Array(91...100))
        #expect(try store.history(channel: "laps/b", after: 0, limit: 1_000).map(\.seq) == Array(31...100))
        #expect(try store.history(channel: "laps/c", after: 0, limit: 1_000).map(\.seq) == Array(1...5))
        // Row ids count the rows inserted: 10 + 70 + 5, not the 205 the tail held.
        let (rows, lastID) = try store.pool.read { db in
            (try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM event_log"),
             try Int.fetchOne(db, sql: "SELECT MAX(id) FROM event_log"))
        }
        #expect(rows == 85)
        #expect(lastID == 85, "nothing was copied and then deleted")
        #expect(try store.oldestRetainedSeq(channel: "laps/a") == 91)
        // A reopened store loads each channel at its seq.
        #expect(try temp.reopen().loadChannels().map(\.seq) == [100, 100, 5])
    }

    @Test("a fold takes the tail's seqs from the writer's memory and refuses a tail that does not match it")
    func foldChecksTheTailAgainstWhatTheWriterKnows() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        try store.apply([.createChannel(.fresh("laps/a")), .createChannel(.fresh("laps/b")),
                         .events("laps/a", from: 1, to: 5), .stateless("laps/b", 1)], foldEvery: 1_000)
        #expect(store.tailSeqs.withLock { $0 } == ["laps/a": 1...5, "laps/b": 1...1])
        // A failed write leaves the memory as it was.
        #expect(throws: StoreError.self) {
            try store.apply([.events("laps/a", from: 6, to: 7), .stateless("laps/b", 5)], foldEvery: 1_000)
        }
        #expect(store.tailSeqs.withLock { $0 } == ["laps/a": 1...5, "laps/b": 1...1])

        // A row put in the tail behind the store's back: the fold is refused
        // whole, and nothing moves.
        try store.pool.write { db in
            try db.execute(sql: "INSERT INTO event_tail (channel, seq, event, data, at) VALUES ('laps/b', 2, 'x', '{}', 't')")
        }
        #expect(throws: StoreError.self) { try store.foldTail(historyLimit: 10) }
        let counts = try store.pool.read { db in
            (try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM event_tail"), try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM event_log"))
        }
        #expect(counts.0 == 7 && counts.1 == 0)

        // Reopened, the store reads the tail itself and folds it whole.
        let reopened = try temp.reopen()
        #expect(try reopened.history(channel: "laps/b", after: 0, limit: 10).map(\.seq) == [1, 2])
        #expect(reopened.tailSeqs.withLock { $0.isEmpty })
        try reopened.apply([.stateless("laps/b", 3)], foldEvery: 1)
        #expect(try reopened.history(channel: "laps/b", after: 0, limit: 10).map(\.seq) == [1, 2, 3])
        #expect(reopened.tailSeqs.withLock { $0.isEmpty }, "an inline fold empties it")
    }

    @Test("commits leave the checkpoint to checkpointIfDue, up to four times its threshold")
    func checkpointsWaitForTheWriterUpToASafetyNet() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        try store.apply([.createChannel(.fresh("laps/a"))])
        let data = JSONText("\"" + String(repeating: "x", count: 3_000) + "\"")
        var seq: Int64 = 0
        func commit() throws {  // ten 3 kB events: several pages a commit
            let events = (1...10).map { offset in
                EventRecord(channel: "laps/a", seq: seq + Int64(offset), event: "tested", data: data, at: "t")
            }
            seq += 10
            try store.apply([.appendEvents(channel: "laps/a", seq: seq, state: nil, events: events)], foldEvery: 1_000_000)
        }
        let threshold = Store.checkpointFrames
        var commits = 0
        while store.walFrames.value < threshold && commits < 2_000 {
            try commit()
            commits += 1
        }
        #expect(store.walFrames.value >= threshold, "\(commits) commits")
        // Past the threshold, commits do not checkpoint: the WAL keeps growing.
        let before = store.walFrames.value
        try commit()
        #expect(store.walFrames.value > before)

        try store.checkpointIfDue()
        #expect(store.walFrames.value == 0)
        try commit()
        #expect((1..<threshold / 10).contains(store.walFrames.value), "the WAL starts over after the checkpoint")
        try store.checkpointIfDue()  // below the threshold: nothing to do
        #expect(store.walFrames.value > 0)

        // Nobody calls checkpointIfDue: at four times the threshold the
        // commit checkpoints itself and the next one starts the WAL over.
        var largest: Int32 = 0
        for _ in 0..<3_000 {
            try commit()
            largest = max(largest, store.walFrames.value)
            if store.walFrames.value < largest { break }
        }
        #expect(largest >= 4 * threshold)
        #expect(store.walFrames.value < threshold / 10, "largest \(largest)")
        #expect(try store.history(channel: "laps/a", after: seq - 3, limit: 10).map(\.seq) == [seq - 2, seq - 1, seq])
        #expect(try temp.reopen().channel(named: "laps/a")?.seq == seq)
    }

    @Test("an append without a state writes only the tail; every reader takes the seq from the log")
    func seqBetweenFoldsComesFromTheLog() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        try store.apply([.createChannel(.fresh("laps/a")), .createChannel(.fresh("laps/b"))])
        for seq in Int64(1)...5 { try store.apply([.stateless("laps/a", seq)], foldEvery: 100) }
        func rowSeq() throws -> Int64? {
            try store.pool.read { db in try Int64.fetchOne(db, sql: "SELECT seq FROM channels WHERE name = 'laps/a'") }
        }
        #expect(try rowSeq() == 0, "the channel row waits for the fold")
        #expect(try store.channel(named: "laps/a")?.seq == 5)
        #expect(try store.loadChannels().map(\.seq) == [5, 0])

        // Without the seqs it remembers, the store asks the log (tail included).
        store.knownSeqs.withLock { $0 = [:] }
        #expect(throws: StoreError.seqMismatch(channel: "laps/a", expected: 4, stored: 5)) {
            try store.apply([.stateless("laps/a", 5)], foldEvery: 100)
        }
        try store.apply([.stateless("laps/a", 6)], foldEvery: 100)

        // A checkpoint stores the state as of the log's seq, not the row's.
        try store.apply([.saveState(channel: "laps/a", state: #"{"v":6}"#)], foldEvery: 100)
        #expect(try store.channel(named: "laps/a")
                == ChannelRecord(name: "laps/a", kind: "laps", seq: 6, state: #"{"v":6}"#, stateSeq: 6))

        // The fold brings the row up to date.
        for seq in Int64(7)...10 { try store.apply([.stateless("laps/a", seq)], foldEvery: 5) }
        #expect(try rowSeq() == 10)
        #expect(try temp.reopen().channel(named: "laps/a")?.seq == 10)
    }

    @Test("a batch of more rows than one INSERT takes lands whole and in order, and counts toward the fold")
    func largeBatchesAreSplitAcrossInserts() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        let channels = ["laps/a", "laps/b", "laps/c"]
        try store.apply(channels.map { .createChannel(.fresh($0)) })
        let perChannel = Int64(Store.tailRowsPerInsert)  // 3 × 32 rows: inserts of 32, 32, 32
        try store.apply(channels.map { .events($0, from: 1, to: perChannel) }, foldEvery: 1_000)
        for channel in channels {
            let events = try store.history(channel: channel, after: 0, limit: 1_000)
            #expect(events.map(\.seq) == Array(1...perChannel))
            #expect(events.last?.data == #"{"n":\#(perChannel)}"#)
        }
        func tailCount() throws -> Int? {
            try store.pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM event_tail") }
        }
        #expect(try tailCount() == 3 * Int(perChannel))
        // Rows 97…196 pass 100: this batch folds (row ids continue across inserts).
        try store.apply([.events("laps/a", from: perChannel + 1, to: perChannel + 100)], foldEvery: 100)
        #expect(try tailCount() == 0)
        #expect(try store.history(channel: "laps/a", after: 0, limit: 1_000).map(\.seq) == Array(1...(perChannel + 100)))
    }

    @Test("random appends, folds and prunes: history is always the newest events, consecutive, from any point",
          arguments: [1, 2, 3])
    func randomAppendsKeepAConsecutiveHistory(seed: UInt64) throws {
        let temp = try TemporaryStore()
        let store = temp.store
        let channels = ["laps/a", "laps/b", "timers/c"]
        try store.apply(channels.map { .createChannel(.fresh($0)) })
        var seqs = [String: Int64](uniqueKeysWithValues: channels.map { ($0, 0) })
        var stateSeqs = seqs
        var state = seed &* 0x9E37_79B9_7F4A_7C15
        func next(_ bound: Int) -> Int {  // deterministic per seed
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        let limit = 10
        for step in 0..<250 {
            var writes: [StoreWrite] = []
            for channel in channels where next(3) > 0 {
                let count = Int64(1 + next(4))
                let from = seqs[channel]! + 1
                let to = seqs[channel]! + count
                let withState = next(4) == 0
                writes.append(.appendEvents(channel: channel, seq: to, state: withState ? #"{"v":\#(to)}"# : nil,
                                            events: (from...to).map {
                    EventRecord(channel: channel, seq: $0, event: "tested", data: #"{"n":\#($0)}"#, at: "t")
                }))
                seqs[channel] = to
                if withState { stateSeqs[channel] = to }
            }
            try store.apply(writes, historyLimit: limit, foldEvery: 7)
            if next(20) == 0 { try store.foldTail(historyLimit: limit) }
            for channel in channels {
                let seq = seqs[channel]!
                let kept = try store.history(channel: channel, after: 0, limit: 10_000).map(\.seq)
                guard let first = kept.first else {
                    #expect(seq == 0, "step \(step): \(channel) at \(seq) kept nothing")
                    continue
                }
                #expect(kept == Array(first...seq), "step \(step): \(channel) kept \(kept)")
                // The newest `limit` at least, and everything after the stored state.
                #expect(first <= max(1, min(seq - Int64(limit) + 1, stateSeqs[channel]! + 1)), "step \(step): \(channel) \(kept)")
                #expect(try store.oldestRetainedSeq(channel: channel) == first)
                let after = first - 1 + Int64(next(kept.count))
                let page = try store.history(channel: channel, after: after, limit: 3).map(\.seq)
                #expect(page == Array((after + 1)...min(after + 3, seq)), "step \(step): \(channel) after \(after): \(page)")
            }
        }
        let reopened = try temp.reopen()
        for channel in channels {
            #expect(try reopened.channel(named: channel)?.seq == seqs[channel])
            #expect(try reopened.history(channel: channel, after: 0, limit: 10_000).last?.seq == seqs[channel])
        }
    }

    @Test("a batch that fails leaves the remembered seqs as they were")
    func aFailedBatchIsForgotten() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        try store.apply([.createChannel(.fresh("laps/a")), .createChannel(.fresh("laps/b")), .stateless("laps/a", 1)])
        // laps/a would move to 2, but laps/b is at 0, not 4: nothing commits.
        #expect(throws: StoreError.seqMismatch(channel: "laps/b", expected: 4, stored: 0)) {
            try store.apply([.stateless("laps/a", 2), .stateless("laps/b", 5)])
        }
        #expect(throws: StoreError.seqMismatch(channel: "laps/a", expected: 2, stored: 1)) {
            try store.apply([.stateless("laps/a", 3)])
        }
        try store.apply([.stateless("laps/a", 2), .stateless("laps/b", 1)])
        #expect(try store.loadChannels().map(\.seq) == [2, 1])
    }

    @Test("opening a store moves a left-over tail into the indexed log")
    func openingFoldsTheTail() throws {
        let temp = try TemporaryStore()
        try temp.store.apply([.createChannel(.fresh("laps/a")), .events("laps/a", from: 1, to: 5)], foldEvery: 100)
        let reopened = try temp.reopen()
        let counts = try reopened.pool.read { db in
            (try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM event_tail"), try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM event_log"))
        }
        #expect(counts.0 == 0 && counts.1 == 5)
        #expect(try reopened.history(channel: "laps/a", after: 2, limit: 10).map(\.seq) == [3, 4, 5])
    }

    @Test func explicitPrune() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        try store.apply([.createChannel(.fresh("laps/a")), .events("laps/a", from: 1, to: 10)])
        try store.prune(channel: "laps/a", keepNewest: 3)
        #expect(try store.history(channel: "laps/a", after: 0, limit: 100).map(\.seq) == [8, 9, 10])
        try store.prune(channel: "laps/a", keepNewest: 0)
        #expect(try store.oldestRetainedSeq(channel: "laps/a") == nil)
        #expect(try store.channel(named: "laps/a")?.seq == 10)
    }

    @Test func reopeningShowsCommittedData() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        try store.apply([.createChannel(.fresh("starport/main")), .events("starport/main", from: 1, to: 3)])
        let reopened = try temp.reopen()
        #expect(try reopened.loadChannels().map(\.seq) == [3])
        #expect(try reopened.history(channel: "starport/main", after: 1, limit: 10).map(\.seq) == [2, 3])
    }

    @Test func readsRunWhileAnotherThreadWrites() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        try store.apply([.createChannel(.fresh("laps/a"))])
        let failures = CommitLog()
        DispatchQueue.concurrentPerform(iterations: 2) { worker in
            for seq in Int64(1)...200 {
                do {
                    if worker == 0 {
                        try store.apply([.event("laps/a", seq)])
                    } else {
                        let page = try store.history(channel: "laps/a", after: 0, limit: 1_000)
                        // A reader sees a committed prefix, never a torn one.
                        if page.map(\.seq) != Array(0..<Int64(page.count)).map({ $0 + 1 }) {
                            failures.sink([StoreCommit(ticket: UInt64(seq), error: .database(code: 0, message: "torn"), batchSize: 0)])
                        }
                    }
                } catch {
                    failures.sink([StoreCommit(ticket: UInt64(seq), error: StoreFailure(error), batchSize: 0)])
                }
            }
        }
        #expect(failures.all.isEmpty)
        #expect(try store.channel(named: "laps/a")?.seq == 200)
    }
}
