import Foundation
import OutaTimeDomain
import OutaTimeProtocol

/// Fixed moments and states shared by the lap stopwatch suites.
enum LapFixtures {
    /// The moment every script starts: "T0".
    static let t0 = ISOTime.parse("2026-11-22T08:00:00Z")!

    /// `ms` milliseconds after T0.
    static func at(_ ms: Int) -> Date { t0.addingTimeInterval(Double(ms) / 1_000) }

    /// The wire form of `ms` after T0, e.g. `2026-11-22T08:01:32.345Z`.
    static func iso(_ ms: Int) -> String {
        let whole = ISOTime.format(t0.addingTimeInterval(Double(ms / 1_000)))
        return String(whole.dropLast()) + "." + String(format: "%03d", ms % 1_000) + "Z"
    }

    /// Paused on lap 3 after two 90 s laps and 1.25 s of the third.
    static let paused = LapSessionState(
        status: .paused, lapNumber: 3, lapElapsedMS: 1_250, totalElapsedMS: 181_250,
        laps: [Lap(lap: 1, timeMS: 90_000), Lap(lap: 2, timeMS: 90_000)],
        averageLapMS: 90_000, bestLapMS: 90_000, worstLapMS: 90_000)

    /// `paused`, started again at T0.
    static let running = LapSessionState(
        status: .running, lapNumber: 3, lapElapsedMS: 1_250, totalElapsedMS: 181_250,
        laps: paused.laps, averageLapMS: 90_000, bestLapMS: 90_000, worstLapMS: 90_000,
        runningSince: iso(0), elapsedAsOf: iso(0))

    /// One command on a copy of `state` at `ms` after T0.
    static func perform(_ state: LapSessionState, _ action: String, atMS ms: Int)
        throws(ProtocolError) -> (LapSessionState, ActionOutcome) {
        var copy = state
        let outcome = try copy.perform(action, ActionArgs(), ActionContext(now: at(ms)))
        return (copy, outcome)
    }

    /// Runs `(action, ms)` steps from `state`; the state and all events.
    static func run(_ steps: [(String, Int)], from state: LapSessionState = .initial)
        throws(ProtocolError) -> (LapSessionState, [DomainEvent]) {
        var current = state
        var events: [DomainEvent] = []
        for (action, ms) in steps {
            let outcome: ActionOutcome
            (current, outcome) = try perform(current, action, atMS: ms)
            events += outcome.events
        }
        return (current, events)
    }

    /// The tick data `{"lap_number", "lap_elapsed_ms", "total_elapsed_ms"}`.
    static func tick(_ lapNumber: Int, _ lapMS: Int, _ totalMS: Int) -> JSONValue {
        .object(["lap_number": int(lapNumber), "lap_elapsed_ms": int(lapMS), "total_elapsed_ms": int(totalMS)])
    }

    /// An integer as a JSON value, for building expected objects.
    static func int(_ value: Int) -> JSONValue { .int(Int64(value)) }
}
