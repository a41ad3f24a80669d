import Foundation
import OutaTimeProtocol

/// The commands of a `laps` channel (domain.md, seed 004): the START/STOP
/// button, the New Lap button and the double tap that resets.
///
/// `perform` only validates and builds events; ``apply(_:at:)`` makes the
/// change, so a client replaying the same events gets the same stopwatch.
extension LapSessionState: ChannelBehaviour {
    /// `start`, `stop`, `lap`, `reset`: all change state (`operate`).
    public static let actions: [String: ActionAccess] = [
        "start": .mutating,
        "stop": .mutating,
        "lap": .mutating,
        "reset": .mutating,
    ]

    /// Performs one of the four actions; none takes arguments (any given are
    /// ignored). The result is the new snapshot as of `context.now`.
    public mutating func perform(
        _ action: String, _ args: ActionArgs, _ context: ActionContext
    ) throws(ProtocolError) -> ActionOutcome {
        // Every moment is taken on the millisecond grid, so the times an
        // event carries are exactly the ones later differences start from.
        let now = MillisecondTime.milliseconds(context.now)
        let events: [LapEvent]
        switch action {
        case "start": events = try start(at: now)
        case "stop": events = try stop(at: now)
        case "lap":
            events = try lap(at: now)
            try context.itemLimit.checkRoom(holding: laps.count, of: "laps", remedy: "stop and reset the stopwatch first")
        case "reset": events = try reset()
        default: throw Self.unknownAction(action, kind: .laps)
        }
        // Validation is over: nothing below throws, so a failed action has
        // left the state untouched.
        let applied = record(events)
        return ActionOutcome(reply: measured(at: MillisecondTime.milliseconds(context.now)), events: applied)
    }

    /// From idle or paused; the times continue from where they were (the
    /// jogger who stopped for a burger), lap 0 becomes lap 1.
    private func start(at now: Int64) throws(ProtocolError) -> [LapEvent] {
        guard status != .running else {
            throw ProtocolError(.conflict,
                "cannot start: the stopwatch is already running (since \(runningSince ?? "?")); stop it first")
        }
        return [.started(runningSince: MillisecondTime.format(now), lapNumber: max(lapNumber, 1),
                         lapElapsedMS: lapElapsedMS, totalElapsedMS: totalElapsedMS)]
    }

    private func stop(at now: Int64) throws(ProtocolError) -> [LapEvent] {
        try requireRunning("stop")
        let live = measured(at: now)
        return [.stopped(lapElapsedMS: live.lapElapsedMS, totalElapsedMS: live.totalElapsedMS)]
    }

    /// The current lap's time is recorded and lap `n + 1` starts at 0 while
    /// the total keeps counting.
    private func lap(at now: Int64) throws(ProtocolError) -> [LapEvent] {
        try requireRunning("lap")
        let live = measured(at: now)
        let completed = Lap(lap: live.lapNumber, timeMS: live.lapElapsedMS)
        // `LapStatistics` of a non-empty list always exists.
        let statistics = LapStatistics(laps + [completed])!
        return [.lapCompleted(completed, statistics: statistics, lapNumber: live.lapNumber + 1,
                              totalElapsedMS: live.totalElapsedMS, completedAt: MillisecondTime.format(now))]
    }

    /// The seed's double tap: not while running, so a stray tap on a running
    /// stopwatch cannot erase a workout.
    private func reset() throws(ProtocolError) -> [LapEvent] {
        guard status != .running else {
            throw ProtocolError(.conflict, "cannot reset while the stopwatch is running: stop first, then reset")
        }
        return [.reset]
    }

    private func requireRunning(_ action: String) throws(ProtocolError) {
        guard status == .running else {
            throw ProtocolError(.conflict, "cannot \(action): the stopwatch is \(status.rawValue); "
                + "\(action) is allowed only while running (start it first)")
        }
    }
}
