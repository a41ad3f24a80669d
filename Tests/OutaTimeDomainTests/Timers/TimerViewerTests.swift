import Foundation
@testable import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// `start`, `stop` and `release(session:)`: the countdown runs while at least
/// one session views it.
@Suite struct TimerViewerTests {
    typealias F = TimerFixture

    /// A list with one stopped 100 s timer.
    static func oneTimer() throws -> TimerListState {
        var list = TimerListState.initial
        _ = try list.perform("add", F.args(["event": .string("Clock tower"), "remaining_s": F.int(100)]), F.context())
        return list
    }

    /// One step: `session` sends `action` on timer 1 at t0 + `at`; the events
    /// it must produce and the viewer count and status after it.
    struct Step: Sendable, CustomTestStringConvertible {
        let session: String
        let action: String
        let at: Double
        let events: [DomainEvent]
        let viewers: Int
        let status: CountdownTimer.Status
        var testDescription: String { "\(session) \(action) at +\(at)" }
    }

    static func started(_ remaining: Int) -> DomainEvent {
        DomainEvent("timer_started", .object(["id": F.int(1), "remaining_s": F.int(remaining)]))
    }

    static func stopped(_ remaining: Int) -> DomainEvent {
        DomainEvent("timer_stopped", .object(["id": F.int(1), "remaining_s": F.int(remaining)]))
    }

    /// Scenarios as step lists, run in order on `oneTimer()`.
    static let scenarios: [(String, [Step])] = [
        ("one viewer starts and stops", [
            Step(session: "alice", action: "start", at: 0, events: [started(100)], viewers: 1, status: .running),
            Step(session: "alice", action: "stop", at: 4.5, events: [stopped(96)], viewers: 0, status: .stopped),
        ]),
        ("second viewer emits nothing; last one leaving stops", [
            Step(session: "alice", action: "start", at: 0, events: [started(100)], viewers: 1, status: .running),
            Step(session: "bob", action: "start", at: 2, events: [], viewers: 2, status: .running),
            Step(session: "alice", action: "stop", at: 3, events: [], viewers: 1, status: .running),
            Step(session: "bob", action: "stop", at: 10, events: [stopped(90)], viewers: 0, status: .stopped),
        ]),
        ("starting twice is one viewer", [
            Step(session: "alice", action: "start", at: 0, events: [started(100)], viewers: 1, status: .running),
            Step(session: "alice", action: "start", at: 1, events: [], viewers: 1, status: .running),
            Step(session: "alice", action: "stop", at: 2, events: [stopped(98)], viewers: 0, status: .stopped),
        ]),
        ("stop without viewing is a no-op", [
            Step(session: "alice", action: "stop", at: 0, events: [], viewers: 0, status: .stopped),
            Step(session: "alice", action: "start", at: 1, events: [started(100)], viewers: 1, status: .running),
            Step(session: "bob", action: "stop", at: 2, events: [], viewers: 1, status: .running),
        ]),
        ("pause and resume keep the count", [
            Step(session: "alice", action: "start", at: 0, events: [started(100)], viewers: 1, status: .running),
            Step(session: "alice", action: "stop", at: 30, events: [stopped(70)], viewers: 0, status: .stopped),
            Step(session: "bob", action: "start", at: 500, events: [started(70)], viewers: 1, status: .running),
            Step(session: "bob", action: "stop", at: 510.9, events: [stopped(60)], viewers: 0, status: .stopped),
        ]),
    ]

    @Test("viewer rules", arguments: scenarios)
    func viewerRules(name: String, steps: [Step]) throws {
        var list = try Self.oneTimer()
        for step in steps {
            let context = F.context(step.at, session: step.session)
            let outcome = try list.perform(step.action, F.args(["id": F.int(1)]), context)
            let timer = try F.timer(1, in: list)
            #expect(outcome.events == step.events, "\(name): \(step)")
            #expect(timer.viewers == step.viewers, "\(name): \(step)")
            #expect(timer.viewerSessions.count == step.viewers, "\(name): \(step)")
            #expect(timer.status == step.status, "\(name): \(step)")
            #expect(outcome.result == timer.json(at: context.now), "\(name): \(step)")
        }
    }

    @Test("a finished timer cannot be started", arguments: ["alice", "bob"])
    func finishedConflict(session: String) throws {
        var list = try F.mixedList()
        let before = list
        let error = try #require(throws: ProtocolError.self) {
            try list.perform("start", F.args(["id": F.int(3)]), F.context(session: session))
        }
        #expect(error.code == .conflict)
        #expect(error.message.contains("timer 3 has finished"))
        #expect(list == before)
    }

    @Test("the last viewer leaving a due timer finishes it", arguments: ["stop", "release"])
    func leavingADueTimer(how: String) throws {
        var list = try Self.oneTimer()
        _ = try list.perform("start", F.args(["id": F.int(1)]), F.context(0))
        // Due at +100, but the scheduler has not called advance yet.
        let events = how == "stop"
            ? try list.perform("stop", F.args(["id": F.int(1)]), F.context(100.2)).events
            : list.release(session: "alice", at: F.at(100.2))
        #expect(events == [DomainEvent("timer_finished", .object(["id": F.int(1)]))])
        #expect(list.timers[0].status == .finished && list.timers[0].remainingS == 0)
    }

    @Test("unknown id", arguments: ["start", "stop", "update", "remove"])
    func notFound(action: String) throws {
        var list = try F.mixedList()
        let before = list
        let error = try #require(throws: ProtocolError.self) {
            try list.perform(action, F.args(["id": F.int(42), "event": .string("E")]), F.context())
        }
        #expect(error.code == .notFound)
        #expect(error.message.contains("42"))
        #expect(list == before)
    }

    @Test("start and stop need an integer id", arguments: ["start", "stop"])
    func badID(action: String) throws {
        var list = try F.mixedList()
        let error = try #require(throws: ProtocolError.self) {
            try list.perform(action, F.args(["id": .string("two")]), F.context())
        }
        #expect(error.code == .invalidArgs)
        #expect(error.message.contains("'id'"))
    }

    /// Timers 1 and 2 (100 s and 200 s); alice views both, bob views 2 only.
    static func sharedList() throws -> TimerListState {
        var list = TimerListState.initial
        for seconds in [100, 200] {
            _ = try list.perform("add", F.args(["event": .string("E"), "remaining_s": F.int(seconds)]), F.context())
        }
        _ = try list.perform("start", F.args(["id": F.int(1)]), F.context(session: "alice"))
        _ = try list.perform("start", F.args(["id": F.int(2)]), F.context(session: "alice"))
        _ = try list.perform("start", F.args(["id": F.int(2)]), F.context(session: "bob"))
        return list
    }

    @Test("release", arguments: [
        ("alice", [DomainEvent("timer_stopped", .object(["id": F.int(1), "remaining_s": F.int(88)]))], [0, 1]),
        ("bob", [], [1, 1]),
        ("carol", [], [1, 2]),
    ] as [(String, [DomainEvent], [Int])])
    func release(session: String, events: [DomainEvent], viewers: [Int]) throws {
        var list = try Self.sharedList()
        #expect(list.release(session: session, at: F.at(12.3)) == events)
        #expect(list.timers.map(\.viewers) == viewers)
        #expect(list.timers.map(\.status) == viewers.map { $0 > 0 ? .running : .stopped })
    }

    @Test func releaseEveryone() throws {
        var list = try Self.sharedList()
        _ = list.release(session: "alice", at: F.at(12.3))
        #expect(list.release(session: "bob", at: F.at(20)) == [
            DomainEvent("timer_stopped", .object(["id": F.int(2), "remaining_s": F.int(180)])),
        ])
        #expect(list.runningTimers.isEmpty && list.nextFinish() == nil && list.tick(at: F.at(20)) == nil)
        #expect(list.release(session: "bob", at: F.at(21)) == [], "a second release changes nothing")
    }
}
