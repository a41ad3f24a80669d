import Foundation
@testable import OutaTimeClient
import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// The mirror's seq rules, without a socket: a DeLorean built by hand and
/// `destination_set` events with increasing seqs.
@Suite("Channel mirror")
struct ChannelMirrorTests {
    static let channel = "delorean/main"
    static let created = ISOTime.parse("2026-11-22T07:53:25Z")!

    static func destination(_ seq: Int64) -> String {
        ISOTime.format(ISOTime.parse("1985-10-26T01:21:00Z")!.addingTimeInterval(Double(seq) * 60))
    }

    static func event(_ seq: Int64) -> ChannelEvent {
        ChannelEvent(EventPush(channel: channel, seq: seq, event: "destination_set",
                               data: .object(["destination_time": .string(destination(seq))]), at: "2026-11-22T08:00:00Z"))
    }

    static func history(_ seq: Int64) -> HistoryEvent {
        let live = event(seq)
        return HistoryEvent(seq: seq, event: live.event, data: live.data, at: live.at)
    }

    /// A DeLorean state whose destination says which seq it is at.
    static func state(at seq: Int64) -> ChannelState {
        var state = ChannelState.initial(kind: .delorean, now: created)
        if seq > 0 { state.apply(event(seq).domainEvent, at: created) }
        return state
    }

    static func snapshot(seq: Int64) -> SubscribeResult {
        SubscribeResult(channel: channel, kind: .delorean, seq: seq,
                        watchers: [Watcher(session: "s-1", name: "Marty")], state: state(at: seq).json())
    }

    /// A mirror synced from a full state at `seq`.
    static func synced(at seq: Int64) throws -> ChannelMirror {
        var mirror = ChannelMirror(channel: channel)
        let outcome = mirror.sync(with: snapshot(seq: seq))
        let (sync, events) = try #require(outcome)
        #expect(sync == ChannelSync(channel: channel, sinceSeq: nil, seq: seq, method: .snapshot))
        #expect(events.isEmpty)
        return mirror
    }

    @Test("the next event applies; older and equal seqs are ignored")
    func appliesInOrder() throws {
        var mirror = try Self.synced(at: 3)
        #expect(mirror.resumeSeq == 3)
        #expect(mirror.apply(Self.event(4)) == .applied)
        #expect(mirror.seq == 4)
        #expect(mirror.state == Self.state(at: 4))
        #expect(mirror.apply(Self.event(4)) == .stale)
        #expect(mirror.apply(Self.event(2)) == .stale)
        #expect(mirror.seq == 4)
        #expect(mirror.state == Self.state(at: 4))
    }

    @Test("a skipped seq is a gap; a recovery fills it and applies the missed events")
    func gapThenRecovery() throws {
        var mirror = try Self.synced(at: 1)
        #expect(mirror.apply(Self.event(3)) == .gap(expected: 2))
        #expect(mirror.seq == 1)
        let recovery = SubscribeResult(channel: Self.channel, kind: .delorean, seq: 3, watchers: [],
                                       recovered: true, events: [Self.history(2), Self.history(3)])
        let outcome = mirror.sync(with: recovery)
        let (sync, events) = try #require(outcome)
        #expect(sync == ChannelSync(channel: Self.channel, sinceSeq: 1, seq: 3, method: .recovered(events: 2)))
        #expect(events.map(\.seq) == [2, 3])
        #expect(events.allSatisfy { $0.replayed })
        #expect(mirror.state == Self.state(at: 3))
    }

    @Test("recovered events that do not continue the mirror are refused, leaving it unchanged")
    func discontinuousRecovery() throws {
        var mirror = try Self.synced(at: 1)
        let broken = SubscribeResult(channel: Self.channel, kind: .delorean, seq: 4, watchers: [],
                                     recovered: true, events: [Self.history(3), Self.history(4)])
        #expect(mirror.sync(with: broken) == nil)
        #expect(mirror.seq == 1)
        #expect(mirror.state == Self.state(at: 1))
        let short = SubscribeResult(channel: Self.channel, kind: .delorean, seq: 5, watchers: [],
                                    recovered: true, events: [Self.history(2)])
        #expect(mirror.sync(with: short) == nil)
    }

    @Test("recovered events the mirror already has are skipped")
    func overlappingRecovery() throws {
        var mirror = try Self.synced(at: 2)
        let recovery = SubscribeResult(channel: Self.channel, kind: .delorean, seq: 3, watchers: [],
                                       recovered: true, events: [Self.history(1), Self.history(2), Self.history(3)])
        let outcome = mirror.sync(with: recovery)
        let (_, events) = try #require(outcome)
        #expect(events.map(\.seq) == [3])
        #expect(mirror.state == Self.state(at: 3))
    }

    @Test("a full state after since replaces the mirror (reloaded)")
    func reload() throws {
        var mirror = try Self.synced(at: 5)
        let outcome = mirror.sync(with: Self.snapshot(seq: 2))
        let (sync, _) = try #require(outcome)
        #expect(sync.method == .reloaded)
        #expect(sync.sinceSeq == 5)
        #expect(mirror.seq == 2)
        #expect(mirror.state == Self.state(at: 2))
    }

    @Test("events before the first state are held, not applied")
    func heldBeforeSync() {
        var mirror = ChannelMirror(channel: Self.channel)
        #expect(mirror.apply(Self.event(1)) == .held)
        #expect(mirror.seq == 0)
        #expect(mirror.resumeSeq == nil)
    }

    @Test("events held while a subscribe goes unanswered are bounded: the oldest go, the newest stay")
    func heldIsBounded() {
        var mirror = ChannelMirror(channel: Self.channel)
        mirror.beginSync()
        let count = Int64(ChannelMirror.maxHeld * 3)
        for seq in 1...count { #expect(mirror.apply(Self.event(seq)) == .held) }
        let held = mirror.endSync()
        #expect(held.count <= ChannelMirror.maxHeld && held.count >= ChannelMirror.maxHeld / 2, "\(held.count) held")
        #expect(held.last?.seq == count, "the newest are kept")
        #expect(zip(held, held.dropFirst()).allSatisfy { $1.seq == $0.seq + 1 }, "in order, without holes")
    }

    @Test("presence pushes keep the watcher list")
    func presence() throws {
        var mirror = try Self.synced(at: 0)
        let doc = Watcher(session: "s-2", name: "Doc")
        mirror.record(PresencePush(channel: Self.channel, joined: [doc], left: []))
        #expect(mirror.watchers.map(\.session) == ["s-1", "s-2"])
        mirror.record(PresencePush(channel: Self.channel, joined: [], left: [Watcher(session: "s-1", name: "Marty")]))
        #expect(mirror.watchers == [doc])
    }

    @Test("watcherCount follows the server's watcher_count, else the list")
    func watcherCount() throws {
        var mirror = try Self.synced(at: 1)
        #expect(mirror.watcherCount == 1, "no count from the server: the list's length")
        let crowd = SubscribeResult(channel: Self.channel, kind: .delorean, seq: 1,
                                    watchers: [Watcher(session: "s-1", name: "Marty")], watcherCount: 500,
                                    state: Self.state(at: 1).json())
        let synced = mirror.sync(with: crowd)
        #expect(synced != nil)
        #expect(mirror.watcherCount == 500)
        #expect(mirror.watchers.count == 1)
        mirror.record(PresencePush(channel: Self.channel, joined: [Watcher(session: "s-2", name: "Doc")],
                                   left: [], watcherCount: 512))
        #expect(mirror.watcherCount == 512)
        #expect(mirror.watchers.map(\.session) == ["s-1", "s-2"])
    }
}
