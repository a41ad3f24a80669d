import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// `start`, `stop`, `lap`, `reset`: every success path and every error.
@Suite struct LapActionTests {
    typealias F = LapFixtures

    @Test func actionsAndAccess() {
        #expect(LapSessionState.actions == [
            "start": .mutating, "stop": .mutating, "lap": .mutating, "reset": .mutating,
        ])
    }

    /// One successful command: where it starts, when, and what must come out.
    struct Success: Sendable, CustomTestStringConvertible {
        var testDescription: String
        var state: LapSessionState
        var action: String
        var ms: Int
        var event: DomainEvent
        var after: LapSessionState
    }

    static let successes: [Success] = [
        Success(testDescription: "start from idle: lap 0 becomes 1", state: .initial, action: "start", ms: 0,
                event: DomainEvent("started", .object([
                    "running_since": .string(F.iso(0)), "lap_number": .int(1),
                    "lap_elapsed_ms": .int(0), "total_elapsed_ms": .int(0),
                ])),
                after: LapSessionState(status: .running, lapNumber: 1, runningSince: F.iso(0), elapsedAsOf: F.iso(0))),
        Success(testDescription: "start from paused: times and lap continue", state: F.paused, action: "start", ms: 0,
                event: DomainEvent("started", .object([
                    "running_since": .string(F.iso(0)), "lap_number": .int(3),
                    "lap_elapsed_ms": .int(1_250), "total_elapsed_ms": .int(181_250),
                ])),
                after: F.running),
        Success(testDescription: "start at a fractional moment", state: .initial, action: "start", ms: 123,
                event: DomainEvent("started", .object([
                    "running_since": .string("2026-11-22T08:00:00.123Z"), "lap_number": .int(1),
                    "lap_elapsed_ms": .int(0), "total_elapsed_ms": .int(0),
                ])),
                after: LapSessionState(status: .running, lapNumber: 1,
                                       runningSince: F.iso(123), elapsedAsOf: F.iso(123))),
        Success(testDescription: "stop: paused with the live times", state: F.running, action: "stop", ms: 5_500,
                event: DomainEvent("stopped", .object([
                    "lap_elapsed_ms": .int(6_750), "total_elapsed_ms": .int(186_750),
                ])),
                after: LapSessionState(status: .paused, lapNumber: 3, lapElapsedMS: 6_750, totalElapsedMS: 186_750,
                                       laps: F.paused.laps, averageLapMS: 90_000,
                                       bestLapMS: 90_000, worstLapMS: 90_000)),
        Success(testDescription: "lap: the lap time is recorded, the next lap starts at 0", state: F.running,
                action: "lap", ms: 92_345,
                event: DomainEvent("lap_completed", .object([
                    "lap": .int(3), "time_ms": .int(93_595),
                    "average_lap_ms": .int(91_198), "best_lap_ms": .int(90_000),
                    "worst_lap_ms": .int(93_595), "lap_number": .int(4), "total_elapsed_ms": .int(273_595),
                    "completed_at": .string("2026-11-22T08:01:32.345Z"),
                ])),
                after: LapSessionState(status: .running, lapNumber: 4, lapElapsedMS: 0, totalElapsedMS: 273_595,
                                       laps: F.paused.laps + [Lap(lap: 3, timeMS: 93_595)],
                                       averageLapMS: 91_198, bestLapMS: 90_000, worstLapMS: 93_595,
                                       runningSince: F.iso(0), elapsedAsOf: F.iso(92_345))),
        Success(testDescription: "reset from paused", state: F.paused, action: "reset", ms: 0,
                event: DomainEvent("reset", .object([:])), after: .initial),
        Success(testDescription: "reset from idle", state: .initial, action: "reset", ms: 0,
                event: DomainEvent("reset", .object([:])), after: .initial),
    ]

    @Test("each action from each state it is allowed in", arguments: successes)
    func success(_ success: Success) throws {
        let (after, outcome) = try F.perform(success.state, success.action, atMS: success.ms)
        #expect(outcome.events == [success.event])
        #expect(after == success.after)
        #expect(outcome.result == after.snapshot(at: F.at(success.ms)))
    }

    /// One failing command and the words its message must contain.
    struct Failure: Sendable, CustomTestStringConvertible {
        var testDescription: String
        var state: LapSessionState
        var action: String
        var code: ErrorCode
        var mentions: [String]
    }

    static let failures: [Failure] = [
        Failure(testDescription: "start while running", state: F.running, action: "start",
                code: .conflict, mentions: ["already running", "stop it first"]),
        Failure(testDescription: "stop while idle", state: .initial, action: "stop",
                code: .conflict, mentions: ["idle", "only while running"]),
        Failure(testDescription: "stop while paused", state: F.paused, action: "stop",
                code: .conflict, mentions: ["paused", "only while running"]),
        Failure(testDescription: "lap while idle", state: .initial, action: "lap",
                code: .conflict, mentions: ["idle", "start it first"]),
        Failure(testDescription: "lap while paused", state: F.paused, action: "lap",
                code: .conflict, mentions: ["paused", "start it first"]),
        Failure(testDescription: "reset while running", state: F.running, action: "reset",
                code: .conflict, mentions: ["running", "stop first"]),
        Failure(testDescription: "unknown action", state: F.paused, action: "split",
                code: .unknownAction, mentions: ["'split'", "lap, reset, start, stop"]),
        Failure(testDescription: "another kind's action", state: F.running, action: "travel",
                code: .unknownAction, mentions: ["'travel'", "laps"]),
    ]

    @Test("errors leave the state unchanged", arguments: failures)
    func failure(_ failure: Failure) {
        var state = failure.state
        #expect {
            try state.perform(failure.action, ActionArgs(), ActionContext(now: F.at(5_000)))
        } throws: { error in
            guard let error = error as? ProtocolError, error.code == failure.code else { return false }
            return failure.mentions.allSatisfy { error.message.contains($0) }
        }
        #expect(state == failure.state)
    }

    /// None of the actions takes arguments; any given are ignored.
    @Test("arguments are ignored", arguments: ["start", "reset"])
    func extraArguments(action: String) throws {
        var state = LapSessionState.initial
        let outcome = try state.perform(action, ActionArgs(["lap_number": .int(7)]), ActionContext(now: F.t0))
        #expect(outcome.events.count == 1)
        #expect(state.lapNumber == (action == "start" ? 1 : 0))
    }
}
