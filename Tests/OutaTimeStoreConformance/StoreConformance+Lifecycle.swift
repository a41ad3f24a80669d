import OutaTimeStore
import Testing

/// Checks of how outcomes are reported, of closing, and of opening the
/// same data again.
extension DurableStoreConformance {
    /// Every ticket is reported exactly once, and one channel's outcomes
    /// come in the order its submissions were made: in a group built while
    /// paused (with a refused submission in its middle) and in groups made
    /// as submissions arrive.
    public static func outcomesOnceInOrder(_ harness: DurableStoreHarness) throws {
        let open = try OpenStore(harness, startsPaused: true)
        var channelOf: [UInt64: String] = [:]
        open.submit([.create("laps/a"), .create("laps/b")])
        var bad: UInt64 = 0
        for seq in Int64(1)...6 {
            channelOf[open.submit([.append("laps/a", seq...seq, withState: seq.isMultiple(of: 2))])] = "laps/a"
            channelOf[open.submit([.append("laps/b", seq...seq)])] = "laps/b"
            if seq == 3 {
                bad = open.submit([.append("laps/a", 9...9)])
                channelOf[bad] = "laps/a"
            }
        }
        #expect(open.outcomes.all.isEmpty, "a paused backend commits nothing")
        open.store.resume()
        for seq in Int64(7)...16 {
            channelOf[open.submit([.append("laps/a", seq...seq)])] = "laps/a"
            channelOf[open.submit([.append("laps/b", seq...seq, withState: false)])] = "laps/b"
        }
        try open.outcomes.waitForCount(open.submitted.count)
        open.store.close()

        let reported = open.outcomes.all
        #expect(reported.count == open.submitted.count, "no ticket reported twice")
        #expect(Set(reported.map(\.ticket)) == Set(open.submitted), "every ticket reported")
        for channel in ["laps/a", "laps/b"] {
            let submittedOrder = open.submitted.filter { channelOf[$0] == channel }
            let reportedOrder = reported.map(\.ticket).filter { channelOf[$0] == channel }
            #expect(reportedOrder == submittedOrder, "\(channel)'s outcomes in submission order")
        }
        for commit in reported where commit.ticket != bad {
            #expect(commit.succeeded, "ticket \(commit.ticket): \(String(describing: commit.error))")
        }
        #expect(reported.first { $0.ticket == bad }?.error
            == .refused(.seqMismatch(channel: "laps/a", expected: 8, stored: 3)))

        let reopened = try OpenStore(harness)
        defer { reopened.store.close() }
        for channel in ["laps/a", "laps/b"] {
            #expect(try reopened.store.history(channel: channel, after: 0, through: .max, limit: 100).map(\.seq)
                == Array(1...16))
        }
    }

    /// `close()` commits and reports what was submitted before it returns,
    /// even while paused.
    public static func closeReportsSubmitted(_ harness: DurableStoreHarness) throws {
        let open = try OpenStore(harness, startsPaused: true)
        open.submit([.create("laps/a")])
        for seq in Int64(1)...4 { open.submit([.append("laps/a", seq...seq)]) }
        #expect(open.outcomes.all.isEmpty)
        open.store.close()

        let reported = open.outcomes.all
        #expect(reported.map(\.ticket).sorted() == open.submitted, "all reported by the time close returned")
        #expect(reported.allSatisfy { $0.succeeded })
        open.store.close()
        #expect(open.outcomes.all.count == reported.count, "a second close reports nothing more")

        let reopened = try OpenStore(harness)
        defer { reopened.store.close() }
        #expect(try reopened.store.channel(named: "laps/a")?.seq == 4)
    }

    /// A submission after `close()` is reported once, failed with
    /// `writerClosed`, and not stored.
    public static func submitAfterClose(_ harness: DurableStoreHarness) throws {
        let open = try OpenStore(harness)
        #expect(try open.failure(of: [.create("laps/a")]) == nil)
        open.store.close()
        let late = open.submit([.append("laps/a", 1...1)])
        #expect(try open.outcomes.waitFor(ticket: late).error == .writerClosed)
        #expect(open.outcomes.all.filter { $0.ticket == late }.count == 1)

        let reopened = try OpenStore(harness)
        defer { reopened.store.close() }
        #expect(try reopened.store.channel(named: "laps/a")?.seq == 0, "the late append is not stored")
    }

    /// `backlog` counts what is not reported yet, `stats` the outcomes,
    /// `textBytesWritten` at least the event data committed.
    public static func countersFollowOutcomes(_ harness: DurableStoreHarness) throws {
        let open = try OpenStore(harness, startsPaused: true)
        defer { open.store.close() }
        #expect(open.store.backlog == 0)
        open.submit([.create("laps/a")])
        open.submit([.append("laps/a", 1...3)])
        open.submit([.append("laps/a", 2...2)])
        open.submit([.append("laps/a", 4...4, withState: false)])
        #expect(open.store.backlog == 4, "paused: all four wait")
        #expect(open.store.stats.writesCommitted == 0)
        open.store.resume()
        try open.outcomes.waitForCount(4)

        #expect(open.store.backlog == 0, "reported means no longer in the backlog")
        #expect(open.store.stats.writesCommitted == 3)
        #expect(open.store.stats.writesFailed == 1)
        let eventBytes = (1...4).map { EventRecord.numbered("laps/a", Int64($0)).data.text.utf8.count }.reduce(0, +)
        #expect(open.store.textBytesWritten >= eventBytes)
    }

    /// A new instance on the same data loads every channel, event, state
    /// and meta value reported committed, and takes the next seqs.
    public static func reopenLoadsCommitted(_ harness: DurableStoreHarness) throws {
        let open = try OpenStore(harness)
        #expect(try open.failure(of: [.create("laps/a"), .create("starport/s"), .create("timers/t"),
                                      .create("laps/gone")]) == nil)
        #expect(try open.failure(of: [.append("laps/a", 1...3), .append("laps/a", 4...5, withState: false)]) == nil)
        #expect(try open.failure(of: [.append("starport/s", 1...2, withState: false)]) == nil)
        #expect(try open.failure(of: [.append("timers/t", 1...1), .saveState(channel: "timers/t", state: #"{"live":1}"#)]) == nil)
        #expect(try open.failure(of: [.setMeta(key: "alive_until", value: "2024-01-01T00:00:09Z"),
                                      .dropEmptyChannel("laps/gone")]) == nil)
        let channels = try open.store.loadChannels()
        #expect(channels.map(\.name) == ["laps/a", "starport/s", "timers/t"])
        func log(_ store: any DurableStore, _ channel: String) throws -> [EventRecord] {
            try store.history(channel: channel, after: 0, through: .max, limit: 100)
        }
        let logs = try channels.map { try log(open.store, $0.name) }
        open.store.close()

        let reopened = try OpenStore(harness)
        defer { reopened.store.close() }
        #expect(try reopened.store.loadChannels() == channels)
        #expect(try channels.map { try log(reopened.store, $0.name) } == logs)
        #expect(try reopened.store.channel(named: "laps/a")
            == ChannelRecord(name: "laps/a", kind: "laps", seq: 5, state: #"{"v":3}"#, stateSeq: 3))
        #expect(try reopened.store.oldestRetainedSeq(channel: "starport/s") == 1)
        #expect(try reopened.store.meta("alive_until") == "2024-01-01T00:00:09Z")
        #expect(try reopened.store.channel(named: "laps/gone") == nil)

        // The stored seqs are known to the new instance's seq check.
        #expect(try reopened.failure(of: [.append("laps/a", 5...5)])
            == .refused(.seqMismatch(channel: "laps/a", expected: 4, stored: 5)))
        #expect(try reopened.failure(of: [.append("laps/a", 6...6), .append("starport/s", 3...3)]) == nil)
        #expect(try reopened.store.channel(named: "laps/a")?.seq == 6)
    }
}
