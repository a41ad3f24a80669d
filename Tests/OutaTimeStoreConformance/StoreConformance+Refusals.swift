import OutaTimeStore
import Testing

/// Checks of the writes a backend refuses, and that a refused submission
/// leaves nothing behind.
extension DurableStoreConformance {
    /// An append whose first seq does not follow the stored seq, ahead or
    /// behind, is refused with `seqMismatch` naming both seqs.
    public static func seqMismatchRefused(_ harness: DurableStoreHarness) throws {
        let open = try OpenStore(harness)
        defer { open.store.close() }
        #expect(try open.failure(of: [.create("laps/a"), .append("laps/a", 1...2)]) == nil)
        let before = try open.store.channel(named: "laps/a")

        // Behind: seq 2 again (a fork of the log).
        #expect(try open.failure(of: [.append("laps/a", 2...2)])
            == .refused(.seqMismatch(channel: "laps/a", expected: 1, stored: 2)))
        #expect(try open.failure(of: [.append("laps/a", 1...3)])
            == .refused(.seqMismatch(channel: "laps/a", expected: 0, stored: 2)))
        // Ahead: seq 5 on a channel at 2.
        #expect(try open.failure(of: [.append("laps/a", 5...5, withState: false)])
            == .refused(.seqMismatch(channel: "laps/a", expected: 4, stored: 2)))

        #expect(try open.store.channel(named: "laps/a") == before, "nothing stored")
        #expect(try open.store.history(channel: "laps/a", after: 0, through: .max, limit: 10).map(\.seq) == [1, 2])
        #expect(try open.failure(of: [.append("laps/a", 3...3)]) == nil, "the seq that follows is still taken")
    }

    /// Events that leave a gap (before them, or between them) are refused;
    /// the log keeps no part of them.
    public static func gapRefused(_ harness: DurableStoreHarness) throws {
        let open = try OpenStore(harness)
        defer { open.store.close() }
        #expect(try open.failure(of: [.create("laps/a"), .append("laps/a", 1...2)]) == nil)

        #expect(try open.failure(of: [.append("laps/a", 4...6)])
            == .refused(.seqMismatch(channel: "laps/a", expected: 3, stored: 2)))
        // Numbered 3 and 5 under seq 4: the count fits, the numbers do not.
        let skipping = StoreWrite.appendEvents(channel: "laps/a", seq: 4, state: nil,
                                               events: [.numbered("laps/a", 3), .numbered("laps/a", 5)])
        let failure = try open.failure(of: [skipping])
        guard case .refused = failure else {
            Issue.record("events 3 and 5 under seq 4 were not refused by the backend: \(String(describing: failure))")
            return
        }
        #expect(try open.store.channel(named: "laps/a")?.seq == 2)
        #expect(try open.store.history(channel: "laps/a", after: 0, through: .max, limit: 10).map(\.seq) == [1, 2])
        #expect(try open.failure(of: [.append("laps/a", 3...4)]) == nil)
        #expect(try open.store.history(channel: "laps/a", after: 0, through: .max, limit: 10).map(\.seq) == [1, 2, 3, 4])
    }

    /// One refused write fails its whole submission: the writes before it
    /// in the same submission are not stored either (a backend that is not
    /// atomic across writes, ``DurableStoreHarness/atomicSubmissions``: they
    /// stay, and nothing after the refused one is applied). The next
    /// submission is unaffected.
    public static func submissionAllOrNothing(_ harness: DurableStoreHarness) throws {
        let open = try OpenStore(harness)
        defer { open.store.close() }
        #expect(try open.failure(of: [.create("laps/a"), .append("laps/a", 1...1)]) == nil)

        let failure = try open.failure(of: [
            .create("laps/b"), .append("laps/a", 2...3), .setMeta(key: "k", value: "v"),
            .append("laps/a", 7...7),
        ])
        #expect(failure == .refused(.seqMismatch(channel: "laps/a", expected: 6, stored: 3)))
        guard harness.atomicSubmissions else {
            // Applied in order up to the refusal; nothing after it.
            #expect(try open.store.channel(named: "laps/b") != nil, "the creation before the refusal stays")
            #expect(try open.store.channel(named: "laps/a")?.seq == 3, "the append before the refusal stays")
            #expect(try open.store.history(channel: "laps/a", after: 0, through: .max, limit: 10).map(\.seq) == [1, 2, 3])
            #expect(try open.store.meta("k") == "v")
            #expect(try open.failure(of: [.append("laps/a", 4...4)]) == nil, "the next submission is unaffected")
            #expect(try open.store.channel(named: "laps/a")?.seq == 4)
            return
        }
        #expect(try open.store.channel(named: "laps/b") == nil, "the creation before the refusal is undone")
        #expect(try open.store.channel(named: "laps/a")?.seq == 1, "the append before the refusal is undone")
        #expect(try open.store.history(channel: "laps/a", after: 0, through: .max, limit: 10).map(\.seq) == [1])
        #expect(try open.store.meta("k") == nil)
        #expect(try open.store.loadChannels().map(\.name) == ["laps/a"])

        // The seqs the failed submission would have used are free again.
        #expect(try open.failure(of: [.create("laps/b"), .append("laps/a", 2...2)]) == nil)
        #expect(try open.store.channel(named: "laps/a")?.seq == 2)
        #expect(try open.store.loadChannels().map(\.name) == ["laps/a", "laps/b"])
    }

    /// Appends, saved states and drops of a channel never created are
    /// refused with `unknownChannel`; creating one twice fails.
    public static func unknownChannelRefused(_ harness: DurableStoreHarness) throws {
        let open = try OpenStore(harness)
        defer { open.store.close() }
        #expect(try open.failure(of: [.append("laps/x", 1...1)]) == .refused(.unknownChannel("laps/x")))
        #expect(try open.failure(of: [.saveState(channel: "laps/x", state: "{}")]) == .refused(.unknownChannel("laps/x")))
        #expect(try open.failure(of: [.dropEmptyChannel("laps/x")]) == .refused(.unknownChannel("laps/x")))
        #expect(try open.store.channel(named: "laps/x") == nil)
        #expect(try open.store.history(channel: "laps/x", after: 0, through: .max, limit: 10).isEmpty)

        #expect(try open.failure(of: [.create("laps/a")]) == nil)
        let again = ChannelRecord(name: "laps/a", kind: "laps", seq: 0, state: #"{"v":"again"}"#)
        #expect(try open.failure(of: [.createChannel(again)]) != nil, "a second creation of the same channel fails")
        #expect(try open.store.channel(named: "laps/a") == .empty("laps/a"))
    }

    /// `dropEmptyChannel` removes a channel without events, which may then
    /// be created anew, and refuses one with events (`notEmpty`).
    public static func dropEmptyChannel(_ harness: DurableStoreHarness) throws {
        let open = try OpenStore(harness)
        defer { open.store.close() }
        #expect(try open.failure(of: [.create("laps/full"), .create("laps/empty"),
                                      .append("laps/full", 1...2, withState: false)]) == nil)

        #expect(try open.failure(of: [.dropEmptyChannel("laps/full")]) == .refused(.notEmpty(channel: "laps/full", seq: 2)))
        #expect(try open.store.channel(named: "laps/full")?.seq == 2)
        #expect(try open.store.history(channel: "laps/full", after: 0, through: .max, limit: 10).count == 2)

        #expect(try open.failure(of: [.dropEmptyChannel("laps/empty")]) == nil)
        #expect(try open.store.channel(named: "laps/empty") == nil)
        #expect(try open.store.loadChannels().map(\.name) == ["laps/full"])

        // The server drops, then creates the same name again, without
        // waiting in between: the backend keeps the order.
        #expect(try open.failure(of: [.create("laps/again")]) == nil)
        let drop = open.submit([.dropEmptyChannel("laps/again")])
        let recreated = ChannelRecord(name: "laps/again", kind: "laps", seq: 0, state: #"{"v":"new"}"#)
        #expect(try open.failure(of: [.createChannel(recreated)]) == nil)
        #expect(try open.outcomes.waitFor(ticket: drop).succeeded)
        #expect(try open.store.channel(named: "laps/again") == recreated)
        #expect(try open.failure(of: [.append("laps/again", 1...1)]) == nil)
        #expect(try open.store.channel(named: "laps/again")?.seq == 1)
    }
}
