import Foundation
import OutaTimeStore
import Testing

/// Checks of what a reader gets back: channels, history pages, meta.
extension DurableStoreConformance {
    /// Created channels load with their fields, ordered by name; a channel
    /// never created is nil.
    public static func createThenLoad(_ harness: DurableStoreHarness) throws {
        let open = try OpenStore(harness)
        defer { open.store.close() }
        #expect(try open.store.loadChannels().isEmpty, "fresh data holds no channel")
        let starport = ChannelRecord(name: "starport/b", kind: "starport", seq: 0, state: #"{"ships":[]}"#)
        #expect(try open.failure(of: [.createChannel(starport)]) == nil)
        #expect(try open.failure(of: [.create("laps/a")]) == nil)

        let loaded = try open.store.loadChannels()
        #expect(loaded == [.empty("laps/a"), starport])
        #expect(loaded.map(\.kind) == ["laps", "starport"])
        #expect(try open.store.channel(named: "starport/b") == starport)
        #expect(try open.store.channel(named: "laps/missing") == nil)
        #expect(!open.store.backendName.isEmpty)
    }

    /// An append with a state moves `stateSeq` along; one without leaves it
    /// behind, and the events after it are the ones a reader replays.
    public static func appendWithAndWithoutState(_ harness: DurableStoreHarness) throws {
        let open = try OpenStore(harness)
        defer { open.store.close() }
        #expect(try open.failure(of: [.create("laps/a"), .append("laps/a", 1...3)]) == nil)
        var record = try #require(try open.store.channel(named: "laps/a"))
        #expect(record.seq == 3 && record.stateSeq == 3 && record.state == #"{"v":3}"#)

        #expect(try open.failure(of: [.append("laps/a", 4...4, withState: false)]) == nil)
        #expect(try open.failure(of: [.append("laps/a", 5...6, withState: false)]) == nil)
        record = try #require(try open.store.channel(named: "laps/a"))
        #expect(record.seq == 6, "the seq follows every append")
        #expect(record.stateSeq == 3 && record.state == #"{"v":3}"#, "the state stays as of seq 3")
        #expect(try open.store.loadChannels() == [record])

        let replay = try open.store.history(channel: "laps/a", after: record.stateSeq, through: record.seq,
                                            limit: Int(record.seq - record.stateSeq))
        #expect(replay == (4...6).map { EventRecord.numbered("laps/a", $0) })
        #expect(replay.map(\.data.text) == [#"{"n":4}"#, #"{"n":5}"#, #"{"n":6}"#])
        #expect(replay.allSatisfy { $0.at == eventTime && $0.channel == "laps/a" })

        #expect(try open.failure(of: [.append("laps/a", 7...7)]) == nil)
        record = try #require(try open.store.channel(named: "laps/a"))
        #expect(record.seq == 7 && record.stateSeq == 7 && record.state == #"{"v":7}"#)
    }

    /// `history` returns events after `after`, at most `limit`, none past
    /// `through`, oldest first; one channel's log only.
    public static func historyPaging(_ harness: DurableStoreHarness) throws {
        let open = try OpenStore(harness)
        defer { open.store.close() }
        #expect(try open.failure(of: [.create("laps/a"), .create("laps/b"), .append("laps/b", 1...2)]) == nil)
        for seq in Int64(1)...10 {
            #expect(try open.failure(of: [.append("laps/a", seq...seq, withState: seq % 3 == 0)]) == nil)
        }
        func seqs(after: Int64, through: Int64 = .max, limit: Int) throws -> [Int64] {
            try open.store.history(channel: "laps/a", after: after, through: through, limit: limit).map(\.seq)
        }
        // Pages of 4 with after = the last seq received.
        #expect(try seqs(after: 0, limit: 4) == [1, 2, 3, 4])
        #expect(try seqs(after: 4, limit: 4) == [5, 6, 7, 8])
        #expect(try seqs(after: 8, limit: 4) == [9, 10])
        #expect(try seqs(after: 10, limit: 4) == [])
        #expect(try seqs(after: 0, limit: 100) == Array(1...10))
        // `through` keeps later events out, whatever the limit.
        #expect(try seqs(after: 2, through: 6, limit: 100) == [3, 4, 5, 6])
        #expect(try seqs(after: 2, through: 6, limit: 2) == [3, 4])
        #expect(try seqs(after: 6, through: 6, limit: 10) == [])
        #expect(try seqs(after: 0, limit: 0) == [])
        let page = try open.store.history(channel: "laps/a", after: 4, through: 5, limit: 10)
        #expect(page == [.numbered("laps/a", 5)])
        #expect(try open.store.history(channel: "laps/b", after: 0, through: .max, limit: 10).map(\.seq) == [1, 2])
        #expect(try open.store.history(channel: "laps/none", after: 0, through: .max, limit: 10).isEmpty)
    }

    /// The oldest kept event: nil before the first, then 1 (nothing is
    /// pruned below the harness's 1,000 events).
    public static func oldestRetainedSeq(_ harness: DurableStoreHarness) throws {
        let open = try OpenStore(harness)
        defer { open.store.close() }
        #expect(try open.failure(of: [.create("laps/a"), .create("laps/b")]) == nil)
        #expect(try open.store.oldestRetainedSeq(channel: "laps/a") == nil)
        #expect(try open.failure(of: [.append("laps/a", 1...3, withState: false)]) == nil)
        #expect(try open.failure(of: [.append("laps/a", 4...5)]) == nil)
        #expect(try open.store.oldestRetainedSeq(channel: "laps/a") == 1)
        #expect(try open.store.oldestRetainedSeq(channel: "laps/b") == nil, "another channel's events do not count")
        #expect(try open.failure(of: [.saveState(channel: "laps/a", state: #"{"v":"saved"}"#)]) == nil)
        #expect(try open.store.oldestRetainedSeq(channel: "laps/a") == 1, "a saved state prunes nothing")
    }

    /// Meta values read back as set, the last one winning; unset is nil.
    public static func metaRoundTrip(_ harness: DurableStoreHarness) throws {
        let open = try OpenStore(harness)
        defer { open.store.close() }
        #expect(try open.store.meta("alive_until") == nil)
        #expect(try open.failure(of: [.setMeta(key: "alive_until", value: "2024-01-01T00:00:00Z"),
                                      .setMeta(key: "other", value: "x")]) == nil)
        #expect(try open.store.meta("alive_until") == "2024-01-01T00:00:00Z")
        #expect(try open.failure(of: [.setMeta(key: "alive_until", value: "2024-01-01T00:00:05Z")]) == nil)
        #expect(try open.store.meta("alive_until") == "2024-01-01T00:00:05Z")
        #expect(try open.store.meta("other") == "x")
        #expect(try open.store.meta("never") == nil)
    }

    /// `saveState` replaces the state as of the current seq (events after
    /// an older state included) and leaves the log alone.
    public static func saveState(_ harness: DurableStoreHarness) throws {
        let open = try OpenStore(harness)
        defer { open.store.close() }
        #expect(try open.failure(of: [.create("timers/t"), .append("timers/t", 1...2),
                                      .append("timers/t", 3...4, withState: false)]) == nil)
        #expect(try open.store.channel(named: "timers/t")?.stateSeq == 2)
        #expect(try open.failure(of: [.saveState(channel: "timers/t", state: #"{"live":4}"#)]) == nil)
        let record = try #require(try open.store.channel(named: "timers/t"))
        #expect(record.seq == 4 && record.stateSeq == 4 && record.state == #"{"live":4}"#)
        // Live values (a running countdown) are as of `stateAt`: the
        // server resumes them from it after a restart.
        let storedAt = try #require(record.stateAt.flatMap { ISO8601DateFormatter().date(from: $0) },
                                    "stateAt \(String(describing: record.stateAt)) is an ISO 8601 time")
        #expect(abs(storedAt.timeIntervalSinceNow) < 120, "stateAt \(storedAt) is the moment of the save")
        #expect(try open.store.history(channel: "timers/t", after: 0, through: .max, limit: 10).map(\.seq) == [1, 2, 3, 4])
        // Without events too: an empty channel's state is replaced at seq 0.
        #expect(try open.failure(of: [.create("timers/u"), .saveState(channel: "timers/u", state: #"{"u":1}"#)]) == nil)
        #expect(try open.store.channel(named: "timers/u") == ChannelRecord(
            name: "timers/u", kind: "timers", seq: 0, state: #"{"u":1}"#))
    }
}
