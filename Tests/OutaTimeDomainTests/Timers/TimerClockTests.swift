import Foundation
@testable import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// The scheduler hooks: `nextFinish`/`advance` (exact finish moments) and
/// `tick` (once a second per list).
@Suite struct TimerClockTests {
    typealias F = TimerFixture

    /// A list with one `seconds` timer, started by "alice" at `start`.
    static func running(_ seconds: Int, startedAt start: Date) throws -> TimerListState {
        var list = TimerListState.initial
        _ = try list.perform("add", F.args(["event": .string("E"), "remaining_s": F.int(seconds)]), ActionContext(now: start))
        _ = try list.perform("start", F.args(["id": F.int(1)]), ActionContext(now: start, session: "alice"))
        return list
    }

    /// Start moments with awkward fractions: the floating-point sums
    /// `start + k` must still count whole seconds exactly. Those just below
    /// 2^29 s after the reference date (2018) cross a binary exponent within
    /// 3 s, where `(start + 1) − start` comes out as 0.99999994.
    static let starts: [Date] = [0, 0.1, 0.123, 0.3, 0.7, 0.999, 1e6 + 0.1].map(F.at) + [
        536_870_911.3, 536_870_910.7, 536_870_909.999_999, 536_870_911.999_9,
    ].map { Date(timeIntervalSinceReferenceDate: $0) }

    @Test("a 3 s timer finishes exactly 3 s after start", arguments: starts)
    func finishesExactly(start: Date) throws {
        var list = try Self.running(3, startedAt: start)
        let finish = start.addingTimeInterval(3)
        #expect(list.nextFinish() == finish)
        #expect(list.advance(to: finish.addingTimeInterval(-0.001)) == [])
        #expect(list.timers[0].status == .running)
        #expect(list.advance(to: finish) == [DomainEvent("timer_finished", .object(["id": F.int(1)]))])
        let timer = list.timers[0]
        #expect(timer.status == .finished && timer.remainingS == 0 && timer.viewers == 0 && timer.viewerSessions.isEmpty)
        #expect(list.nextFinish() == nil && list.tick(at: finish) == nil)
        #expect(list.advance(to: finish.addingTimeInterval(10)) == [], "finishes once")
    }

    @Test("remaining falls by exactly 1 at each whole second", arguments: starts)
    func wholeSeconds(start: Date) throws {
        let list = try Self.running(3, startedAt: start)
        for (elapsed, expected) in [(0.0, 3), (0.999, 3), (1, 2), (1.5, 2), (2, 1), (2.999, 1), (3, 0), (3.5, 0)] {
            let now = start.addingTimeInterval(elapsed)
            #expect(list.timers[0].remaining(at: now) == expected, "+\(elapsed)")
            #expect(F.timers(list.tick(at: now)) == .array([
                .object(["id": F.int(1), "remaining_s": F.int(expected)]),
            ]))
        }
    }

    @Test("remaining is never negative", arguments: [3.0, 60, 86_400 * 365, -5] as [Double])
    func neverNegative(late: Double) throws {
        let list = try Self.running(3, startedAt: F.t0)
        let now = F.at(3 + late)
        let remaining = list.timers[0].remaining(at: now)
        #expect(remaining >= 0 && remaining <= 3)
        if late >= 0 { #expect(remaining == 0) }
    }

    @Test func aClockBeforeTheStartShowsTheFullValue() throws {
        let list = try Self.running(10, startedAt: F.t0)
        #expect(list.timers[0].remaining(at: F.at(-2)) == 10)
    }

    @Test func tickCarriesEveryRunningTimer() throws {
        var list = TimerListState.initial
        for (seconds, start) in [(10, 0.0), (600, 0), (5, 2.5), (7, 0)] {
            _ = try list.perform("add", F.args(["event": .string("E"), "remaining_s": F.int(seconds)]), F.context(start))
        }
        _ = try list.perform("start", F.args(["id": F.int(1)]), F.context(0))
        _ = try list.perform("start", F.args(["id": F.int(2)]), F.context(0, session: "bob"))
        _ = try list.perform("start", F.args(["id": F.int(3)]), F.context(2.5))
        // Timer 4 stays stopped and is not in the tick.
        func entry(_ id: Int, _ remaining: Int) -> JSONValue {
            .object(["id": F.int(id), "remaining_s": F.int(remaining)])
        }
        #expect(F.timers(list.tick(at: F.at(4))) == .array([entry(1, 6), entry(2, 596), entry(3, 4)]))
        #expect(F.tickAt(list.tick(at: F.at(4.25))) == .string(F.isoMilliseconds(4.25)), "the tick's second, to the millisecond")
        #expect(list.nextFinish() == F.at(7.5))
        #expect(list.advance(to: F.at(12)) == [
            DomainEvent("timer_finished", .object(["id": F.int(3)])),
            DomainEvent("timer_finished", .object(["id": F.int(1)])),
        ], "in the order they finished")
        #expect(F.timers(list.tick(at: F.at(12))) == .array([entry(2, 588)]))
        #expect(list.nextFinish() == F.at(600))
    }

    @Test func aTickForAnEarlierSecondLeavesOutTimersStartedAfterIt() throws {
        // The server builds a late tick for its own second: a countdown that
        // started after that second first appears in the next tick, so its
        // values step by exactly one from tick to tick.
        var list = TimerListState.initial
        for _ in 0..<2 {
            _ = try list.perform("add", F.args(["event": .string("E"), "remaining_s": F.int(30)]), F.context(0))
        }
        _ = try list.perform("start", F.args(["id": F.int(1)]), F.context(0))
        _ = try list.perform("start", F.args(["id": F.int(2)]), F.context(1.2))
        func entry(_ id: Int, _ remaining: Int) -> JSONValue {
            .object(["id": F.int(id), "remaining_s": F.int(remaining)])
        }
        #expect(F.timers(list.tick(at: F.at(1))) == .array([entry(1, 29)]))
        #expect(F.timers(list.tick(at: F.at(2))) == .array([entry(1, 28), entry(2, 30)]))
        #expect(F.timers(list.tick(at: F.at(3))) == .array([entry(1, 27), entry(2, 29)]))
    }

    @Test func theTypedTickEncodesAsTheJSONTick() throws {
        var list = TimerListState.initial
        for seconds in [10, 600] {
            _ = try list.perform("add", F.args(["event": .string("E"), "remaining_s": F.int(seconds)]), F.context(0))
        }
        _ = try list.perform("start", F.args(["id": F.int(1)]), F.context(0))
        _ = try list.perform("start", F.args(["id": F.int(2)]), F.context(0.5))
        let now = F.at(3.25)
        let typed = try JSONValue.parse(JSONEncoder().encode(try #require(list.tickData(at: now))))
        #expect(typed == list.tick(at: now))
        #expect(F.timers(typed) == .array([
            .object(["id": F.int(1), "remaining_s": F.int(7)]),
            .object(["id": F.int(2), "remaining_s": F.int(598)]),
        ]))
    }

    @Test func simultaneousFinishesAreOrderedByID() throws {
        var list = TimerListState.initial
        for _ in 0..<3 {
            _ = try list.perform("add", F.args(["event": .string("E"), "remaining_s": F.int(5)]), F.context())
        }
        for id in [3, 1, 2] {
            _ = try list.perform("start", F.args(["id": F.int(id)]), F.context())
        }
        let ids = list.advance(to: F.at(5)).map { F.field($0.data, "id") }
        #expect(ids == [F.int(1), F.int(2), F.int(3)])
    }

    @Test func noTickWithoutRunningTimers() throws {
        var list = try F.mixedList()
        #expect(list.tick(at: F.t0) != nil)
        _ = try list.perform("stop", F.args(["id": F.int(2)]), F.context(1, session: "alice"))
        #expect(list.tick(at: F.at(1)) == nil)
        #expect(TimerListState.initial.tick(at: F.t0) == nil)
        #expect(TimerListState.initial.nextFinish() == nil)
    }

    @Test func restartingTheCountdownMovesTheDeadline() throws {
        var list = try Self.running(100, startedAt: F.at(0.4))
        _ = try list.perform("update", F.args(["id": F.int(1), "remaining_s": F.int(3)]), F.context(50.2))
        #expect(list.nextFinish() == F.at(53.2))
        #expect(list.advance(to: F.at(53.1)) == [])
        #expect(list.advance(to: F.at(53.2)).count == 1)
    }

    @Test("viewed in pieces shorter than a second, a countdown falls by one for every second it ran in all")
    func piecesShorterThanASecond() throws {
        var list = try Self.running(10, startedAt: F.t0)
        var now = 0.0
        var stops: [Int] = []
        // Eight pieces of 0.6 s: 4.8 s of running.
        for piece in 0..<8 {
            if piece > 0 { _ = try list.perform("start", F.args(["id": F.int(1)]), F.context(now)) }
            now += 0.6
            let stop = try list.perform("stop", F.args(["id": F.int(1)]), F.context(now))
            #expect(stop.events.map(\.name) == ["timer_stopped"])
            stops.append(list.timers[0].remainingS)
            now += 0.25  // paused: no time counts
        }
        #expect(stops == [10, 9, 9, 8, 7, 7, 6, 6], "after 0.6, 1.2, … 4.8 s of running")
        #expect(list.timers[0].remainingS == 6 && list.timers[0].carriedMS == 800)
        // Running again, it goes on from 4.8 s: 5 s at +0.2 s, finished at +5.2 s.
        _ = try list.perform("start", F.args(["id": F.int(1)]), F.context(now))
        #expect(list.timers[0].remaining(at: F.at(now + 0.199)) == 6)
        #expect(list.timers[0].remaining(at: F.at(now + 0.201)) == 5)
        let finish = try #require(list.nextFinish())
        #expect(abs(finish.timeIntervalSince(F.at(now + 5.2))) < 0.000_001, "\(finish)")
        // Setting the remaining time starts it afresh from a whole second.
        _ = try list.perform("stop", F.args(["id": F.int(1)]), F.context(now + 0.5))
        _ = try list.perform("update", F.args(["id": F.int(1), "remaining_s": F.int(3)]), F.context(now + 1))
        _ = try list.perform("start", F.args(["id": F.int(1)]), F.context(now + 2))
        #expect(list.nextFinish() == F.at(now + 5))
    }

    @Test func startingATimerAtZeroFinishesItAtOnce() throws {
        // A stopped timer at 0 only arises from an edited stored state; it
        // must finish, not count below 0.
        var list = TimerListState(timers: [CountdownTimer(id: 1, event: "E", location: "", remainingS: 0)])
        let outcome = try list.perform("start", F.args(["id": F.int(1)]), F.context(1))
        #expect(outcome.events.map(\.name) == ["timer_started"])
        #expect(list.nextFinish() == F.at(1))
        #expect(list.advance(to: F.at(1)).map(\.name) == ["timer_finished"])
    }
}
