import Foundation
@testable import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// The "alive until" restart rule: after a crash, running timers pause at
/// their value as of the last moment the server was known to be up, with
/// countdown bases rebuilt from storage (`resumeCountdowns(storedAt:)`) and
/// from the replayed events.
@Suite struct TimerRestartTests {
    typealias F = TimerFixture

    /// The events a list's commands produced, each with its whole-second
    /// `at`, as the store keeps them.
    struct Log {
        var events: [(DomainEvent, Date)] = []

        mutating func run(_ list: inout TimerListState, _ action: String, _ args: [String: JSONValue],
                          at seconds: Double, session: String = "ann") throws {
            let outcome = try list.perform(action, F.args(args), F.context(seconds, session: session))
            events += outcome.events.map { ($0, ReplayLog.wholeSecond(F.at(seconds))) }
        }

        func replay(onto start: TimerListState, from first: Int = 0) -> TimerListState {
            var list = start
            for (event, at) in events[first...] { list.apply(event, at: at) }
            return list
        }
    }

    /// Live: timer 1 (100 s) and timer 3 (20 s) started at +0.3 s and +0.6 s,
    /// timer 2 stopped at 50 s, timer 4 finished.
    static func live() throws -> (TimerListState, Log) {
        var list = TimerListState.initial
        var log = Log()
        try log.run(&list, "add", ["event": .string("Clock tower"), "remaining_s": F.int(100)], at: 0.1)
        try log.run(&list, "add", ["event": .string("Dance"), "remaining_s": F.int(50)], at: 0.1)
        try log.run(&list, "add", ["event": .string("Lightning"), "remaining_s": F.int(20)], at: 0.2)
        try log.run(&list, "add", ["event": .string("Done"), "remaining_s": F.int(0)], at: 0.2)
        try log.run(&list, "start", ["id": F.int(1)], at: 0.3)
        try log.run(&list, "start", ["id": F.int(1)], at: 0.35, session: "bob")
        try log.run(&list, "start", ["id": F.int(3)], at: 0.6)
        return (list, log)
    }

    @Test("a base from replay pauses at its value as of alive-until, never below the live one", arguments: [
        // (alive until, timer 1's value then, the live value): the replayed
        // base starts at +0 s (its event's whole second), the live one at
        // +0.3 s, and is read 1 s early: the live value or 1 more, never
        // less (a value below the live one could even finish a timer that
        // had a second left).
        (40.5, 61, 60), (40.1, 61, 61), (99.9, 2, 1), (0.2, 100, 100),
    ] as [(Double, Int, Int)])
    func replayOnly(aliveUntil: Double, expected: Int, liveValue: Int) throws {
        let (live, log) = try Self.live()
        #expect(live.timers[0].remaining(at: F.at(aliveUntil)) == liveValue)
        #expect(expected >= liveValue && expected <= liveValue + 1)
        var restarted = log.replay(onto: .initial)
        let events = restarted.recoverAfterRestart(at: F.at(500), aliveUntil: F.at(aliveUntil))
        let third: DomainEvent = aliveUntil - 1 >= 20
            ? DomainEvent("timer_finished", .object(["id": F.int(3)]))
            : DomainEvent("timer_stopped", .object(["id": F.int(3), "remaining_s": F.int(20 - max(0, Int((aliveUntil - 1).rounded(.down))))]))
        #expect(events == [
            DomainEvent("timer_stopped", .object(["id": F.int(1), "remaining_s": F.int(expected)])),
            third,
        ])
        #expect(restarted.timers.map(\.viewers) == [0, 0, 0, 0])
        #expect(restarted.runningTimers.isEmpty && restarted.nextFinish() == nil)
        #expect(restarted.recoverAfterRestart(at: F.at(501), aliveUntil: F.at(aliveUntil)) == [], "idempotent")
    }

    @Test func aBaseResumedFromTheStoredState() throws {
        var (live, log) = try Self.live()
        // The state is stored with a commit at +10.7 s; one more event follows.
        try log.run(&live, "update", ["id": F.int(2), "location": .string("Gym")], at: 10.7)
        let stored = ChannelState.timers(live.checkpoint(at: F.at(10.7))).jsonText()
        let storedEvents = log.events.count
        try log.run(&live, "update", ["id": F.int(2), "event": .string("Enchantment")], at: 12.4)

        var restarted = try F.decode(try JSONValue.parse(Data(stored.utf8)))
        #expect(restarted.timers[0].remainingS == 90 && restarted.nextFinish() == nil)
        // The last event in the stored state has `at` +10 s (+10.7 s cut).
        restarted.resumeCountdowns(storedAt: log.events[storedEvents - 1].1)
        restarted = log.replay(onto: restarted, from: storedEvents)
        #expect(restarted.timers[0].deadline == F.at(100), "timer 1: 90 s left from +10 s")
        #expect(restarted.nextFinish() == F.at(20), "timer 3: 10 s left from +10 s")
        #expect(restarted.earliestRunningSince == F.at(10))
        #expect(restarted.timers[1].event == "Enchantment" && restarted.timers[1].location == "Gym")

        let events = restarted.recoverAfterRestart(at: F.at(300), aliveUntil: F.at(40.5))
        #expect(events == [
            DomainEvent("timer_stopped", .object(["id": F.int(1), "remaining_s": F.int(61)])),
            DomainEvent("timer_finished", .object(["id": F.int(3)])),
        ])
        #expect(live.timers[0].remaining(at: F.at(40.5)) == 60, "the live value: one less, never more")
    }

    @Test func withoutAliveUntilTheStoredValuesComeBack() throws {
        let (_, log) = try Self.live()
        var restarted = log.replay(onto: .initial)
        var viaOldAPI = restarted
        let events = restarted.recoverAfterRestart(at: F.at(500), aliveUntil: nil)
        // The values the countdowns started from: nothing is known after that.
        #expect(events == [
            DomainEvent("timer_stopped", .object(["id": F.int(1), "remaining_s": F.int(100)])),
            DomainEvent("timer_stopped", .object(["id": F.int(3), "remaining_s": F.int(20)])),
        ])
        #expect(viaOldAPI.recoverAfterRestart(at: F.at(500)) == events)
        #expect(viaOldAPI == restarted)
    }

    @Test func aRunningTimerWithoutABaseKeepsItsStoredValue() throws {
        let (live, _) = try Self.live()
        var restarted = try F.decode(live.snapshot(at: F.at(10.7)))
        let events = restarted.recoverAfterRestart(at: F.at(300), aliveUntil: F.at(40.5))
        #expect(events == [
            DomainEvent("timer_stopped", .object(["id": F.int(1), "remaining_s": F.int(90)])),
            DomainEvent("timer_stopped", .object(["id": F.int(3), "remaining_s": F.int(10)])),
        ])
    }

    @Test func aTimerStartedAfterAliveUntilKeepsItsStartValue() throws {
        var (_, log) = try Self.live()
        var list = log.replay(onto: .initial)
        try log.run(&list, "add", ["event": .string("Late"), "remaining_s": F.int(30)], at: 41)
        try log.run(&list, "start", ["id": F.int(5)], at: 41.7)
        var restarted = log.replay(onto: .initial)
        let events = restarted.recoverAfterRestart(at: F.at(300), aliveUntil: F.at(40.5))
        #expect(events.last == DomainEvent("timer_stopped", .object(["id": F.int(5), "remaining_s": F.int(30)])))
    }

    @Test func resumeLeavesBasesAndStoppedTimersAlone() throws {
        var (live, _) = try Self.live()
        _ = try live.perform("stop", F.args(["id": F.int(3)]), F.context(5.2, session: "ann"))
        let before = live
        live.resumeCountdowns(storedAt: F.at(99))
        #expect(live == before)

        var decoded = try F.decode(before.snapshot(at: F.at(7)))
        decoded.resumeCountdowns(storedAt: F.at(7))
        #expect(decoded.timers.map { $0.countdown?.since } == [F.at(7), nil, nil, nil])
        // Timer 1 had 94 s left at +7 s.
        #expect(decoded.tick(at: F.at(8.5)).flatMap(F.timers) == .array([.object(["id": F.int(1), "remaining_s": F.int(93)])]))
        #expect(decoded.advance(to: F.at(100.9)) == [])
        #expect(decoded.advance(to: F.at(101)) == [DomainEvent("timer_finished", .object(["id": F.int(1)]))])
    }
}
