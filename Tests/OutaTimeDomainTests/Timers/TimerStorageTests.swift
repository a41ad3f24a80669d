import Foundation
@testable import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// Snapshot, checkpoint and restart: what is stored, what clients see, and
/// what comes back after the server went down.
@Suite struct TimerStorageTests {
    typealias F = TimerFixture

    @Test("checkpoint bakes in live values", arguments: [
        (0.0, 300), (0.999, 300), (7.9, 293), (299.5, 1), (300, 0), (1_000, 0),
    ] as [(Double, Int)])
    func checkpoint(elapsed: Double, expected: Int) throws {
        let list = try F.mixedList()
        let stored = list.checkpoint(at: F.at(elapsed))
        #expect(stored.timers.map(\.remainingS) == [600, expected, 0])
        #expect(stored.timers.map(\.status) == [.stopped, .running, .finished])
        #expect(list.timers[1].remainingS == 300, "the live state is untouched")
        // The runtime base survives, so the copy counts down like the original.
        #expect(stored.timers[1].remaining(at: F.at(elapsed + 10)) == list.timers[1].remaining(at: F.at(elapsed + 10)))
        #expect(stored.nextFinish() == list.nextFinish())
    }

    @Test("the stored form of a checkpoint is the snapshot", arguments: [0.0, 12.5, 301])
    func snapshotMatchesStoredForm(elapsed: Double) throws {
        var list = try F.mixedList()
        _ = try list.perform("start", F.args(["id": F.int(1)]), F.context(1, session: "bob"))
        let now = F.at(elapsed)
        #expect(list.snapshot(at: now) == ChannelState.timers(list.checkpoint(at: now)).json())
    }

    @Test func runtimeFieldsAreNotStored() throws {
        let list = try F.mixedList()
        let text = ChannelState.timers(list.checkpoint(at: F.at(4))).jsonText()
        #expect(text == #"{"timers":[{"id":1,"event":"Clock tower","location":"Hill Valley","remaining_s":600,"status":"stopped","viewers":0},{"id":2,"event":"Dance","location":"","remaining_s":296,"status":"running","viewers":1},{"id":3,"event":"Flux capacitor","location":"","remaining_s":0,"status":"finished","viewers":0}]}"#)
        let reloaded = try F.decode(ChannelState.timers(list).json())
        #expect(reloaded.timers[1].viewers == 1 && reloaded.timers[1].viewerSessions.isEmpty)
        #expect(reloaded.timers[1].countdown == nil)
        #expect(reloaded != list, "equality sees the runtime fields")
        #expect(reloaded.snapshot(at: F.t0) == list.snapshot(at: F.t0), "clients see the same")
    }

    @Test("recover after restart", arguments: [
        // (checkpoint at, crash at): the stored value is what comes back.
        (5.0, 9.9, 295), (0, 4.9, 300), (123.4, 128, 177),
    ] as [(Double, Double, Int)])
    func recover(checkpointAt: Double, crashAt: Double, expected: Int) throws {
        var live = try F.mixedList()
        _ = try live.perform("start", F.args(["id": F.int(2)]), F.context(1, session: "bob"))
        let stored = ChannelState.timers(live.checkpoint(at: F.at(checkpointAt))).jsonText()
        let trueRemaining = live.timers[1].remaining(at: F.at(crashAt))

        guard case .timers(var restarted) = try ChannelState(kind: .timers, jsonText: stored) else {
            Issue.record("not a timer list")
            return
        }
        let events = restarted.recoverAfterRestart(at: F.at(crashAt + 60))
        #expect(events == [DomainEvent("timer_stopped", .object(["id": F.int(2), "remaining_s": F.int(expected)]))])
        #expect(expected - trueRemaining <= 5, "at most 5 s lost when checkpointed every 5 s")
        #expect(restarted.timers.map(\.status) == [.stopped, .stopped, .finished])
        #expect(restarted.timers.map(\.viewers) == [0, 0, 0])
        #expect(restarted.nextFinish() == nil && restarted.tick(at: F.at(crashAt + 60)) == nil)
        #expect(restarted.recoverAfterRestart(at: F.at(crashAt + 61)) == [], "idempotent")

        // Viewers come back one by one, from the stored value.
        let outcome = try restarted.perform("start", F.args(["id": F.int(2)]), F.context(crashAt + 70, session: "carol"))
        #expect(outcome.events == [DomainEvent("timer_started", .object(["id": F.int(2), "remaining_s": F.int(expected)]))])
    }

    @Test func recoverFinishesATimerCheckpointedAtZero() throws {
        let live = try F.mixedList()
        var restarted = try F.decode(live.snapshot(at: F.at(300)))
        #expect(restarted.recoverAfterRestart(at: F.at(400)) == [DomainEvent("timer_finished", .object(["id": F.int(2)]))])
        #expect(restarted.timers[1].status == .finished)
    }

    @Test func recoverWithNothingRunning() throws {
        var list = TimerListState(timers: [
            CountdownTimer(id: 1, event: "E", location: "", remainingS: 9, status: .stopped, viewers: 2),
        ])
        #expect(list.recoverAfterRestart(at: F.t0) == [])
        #expect(list.timers[0].viewers == 0, "a stale count is reset")
        #expect(TimerListState.initial.checkpoint(at: F.t0) == .initial)
    }

    @Test func nextIDRoundTrips() throws {
        let list = TimerListState(timers: [CountdownTimer(id: 2, event: "E", location: "", remainingS: 1)], nextID: 9)
        let text = ChannelState.timers(list).jsonText()
        #expect(text.contains(#""next_id":9"#))
        guard case .timers(let decoded) = try ChannelState(kind: .timers, jsonText: text) else {
            Issue.record("not a timer list")
            return
        }
        #expect(decoded == list)
        #expect(TimerListState(timers: list.timers, nextID: 1).nextID == 3, "never below highest id + 1")
    }
}
