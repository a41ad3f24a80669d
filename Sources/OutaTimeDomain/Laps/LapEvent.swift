import Foundation
import OutaTimeProtocol

/// The durable events of a `laps` channel, typed.
///
/// Each event carries absolute values (elapsed times and the moment they were
/// measured), never "add this much": a client that applies it to any earlier
/// snapshot reaches the server's state, however long ago that snapshot was
/// taken. Moments are ISO 8601 with milliseconds (``MillisecondTime``).
enum LapEvent: Sendable, Equatable, JSONPayload {
    /// `started {running_since, lap_number, lap_elapsed_ms, total_elapsed_ms}`:
    /// running from `running_since` with the times it had then.
    case started(runningSince: String, lapNumber: Int, lapElapsedMS: Int, totalElapsedMS: Int)
    /// `stopped {lap_elapsed_ms, total_elapsed_ms}`: paused with these times.
    case stopped(lapElapsedMS: Int, totalElapsedMS: Int)
    /// `lap_completed {lap, time_ms, average_lap_ms, best_lap_ms, worst_lap_ms,
    /// lap_number, total_elapsed_ms, completed_at}`: lap `lap` took `time_ms`;
    /// lap `lap_number` begins at `completed_at`, when the total was
    /// `total_elapsed_ms`. The statistics include the new lap.
    case lapCompleted(Lap, statistics: LapStatistics, lapNumber: Int, totalElapsedMS: Int, completedAt: String)
    /// `reset {}`: back to the idle stopwatch with no laps.
    case reset

    /// The event's name on the wire.
    var name: String {
        switch self {
        case .started: "started"
        case .stopped: "stopped"
        case .lapCompleted: "lap_completed"
        case .reset: "reset"
        }
    }

    /// The event, its data encoded once.
    var domainEvent: DomainEvent { DomainEvent(name, encoding: self) }

    /// The data object, as `init?(_:)` reads it.
    func writeFields(to fields: inout JSONFields) {
        switch self {
        case .started(let since, let lapNumber, let lapMS, let totalMS):
            fields.write("running_since", since)
            fields.write("lap_number", lapNumber)
            fields.write("lap_elapsed_ms", lapMS)
            fields.write("total_elapsed_ms", totalMS)
        case .stopped(let lapMS, let totalMS):
            fields.write("lap_elapsed_ms", lapMS)
            fields.write("total_elapsed_ms", totalMS)
        case .lapCompleted(let lap, let statistics, let lapNumber, let totalMS, let completedAt):
            fields.write("lap", lap.lap)
            fields.write("time_ms", lap.timeMS)
            fields.write("average_lap_ms", statistics.averageMS)
            fields.write("best_lap_ms", statistics.bestMS)
            fields.write("worst_lap_ms", statistics.worstMS)
            fields.write("lap_number", lapNumber)
            fields.write("total_elapsed_ms", totalMS)
            fields.write("completed_at", completedAt)
        case .reset:
            break
        }
    }

    /// Reads a wire event; nil for a name this kind does not have or data
    /// missing a key that `apply` needs. The statistics in `lap_completed` are
    /// for people; `apply` recomputes them from the lap list.
    init?(_ event: DomainEvent) {
        guard case .object(let data) = event.data else { return nil }
        func int(_ key: String) -> Int? {
            if case .int(let number)? = data[key] { Int(exactly: number) } else { nil }
        }
        func string(_ key: String) -> String? {
            if case .string(let text)? = data[key] { text } else { nil }
        }
        switch event.name {
        case "started":
            guard let since = string("running_since"), let lapNumber = int("lap_number"),
                  let lapMS = int("lap_elapsed_ms"), let totalMS = int("total_elapsed_ms") else { return nil }
            self = .started(runningSince: since, lapNumber: lapNumber, lapElapsedMS: lapMS, totalElapsedMS: totalMS)
        case "stopped":
            guard let lapMS = int("lap_elapsed_ms"), let totalMS = int("total_elapsed_ms") else { return nil }
            self = .stopped(lapElapsedMS: lapMS, totalElapsedMS: totalMS)
        case "lap_completed":
            guard let lap = int("lap"), let timeMS = int("time_ms"), let lapNumber = int("lap_number"),
                  let totalMS = int("total_elapsed_ms"), let completedAt = string("completed_at") else { return nil }
            let statistics = LapStatistics(averageMS: int("average_lap_ms") ?? timeMS,
                                           bestMS: int("best_lap_ms") ?? timeMS, worstMS: int("worst_lap_ms") ?? timeMS)
            self = .lapCompleted(Lap(lap: lap, timeMS: timeMS), statistics: statistics,
                                 lapNumber: lapNumber, totalElapsedMS: totalMS, completedAt: completedAt)
        case "reset":
            self = .reset
        default:
            return nil
        }
    }
}

/// Event sourcing for the lap stopwatch: every durable change is an event
/// applied here, on the server and in clients replaying `history` alike.
extension LapSessionState {
    /// Applies one durable event.
    ///
    /// An event this kind does not know, or one without the data it needs,
    /// leaves the state unchanged rather than trapping: a replaying reader
    /// must survive an event written by a newer server. `at` is unused (every
    /// event carries its own moments) and kept for the uniform kind API.
    public mutating func apply(_ event: DomainEvent, at: Date) {
        guard let event = LapEvent(event) else { return }
        apply(event)
    }

    /// Applies a typed event.
    mutating func apply(_ event: LapEvent) {
        switch event {
        case .started(let since, let lapNumber, let lapMS, let totalMS):
            status = .running
            self.lapNumber = lapNumber
            lapElapsedMS = lapMS
            totalElapsedMS = totalMS
            runningSince = since
            elapsedAsOf = since
        case .stopped(let lapMS, let totalMS):
            status = .paused
            lapElapsedMS = lapMS
            totalElapsedMS = totalMS
            runningSince = nil
            elapsedAsOf = nil
        case .lapCompleted(let lap, _, let lapNumber, let totalMS, let completedAt):
            laps.append(lap)
            refreshStatistics()
            self.lapNumber = lapNumber
            lapElapsedMS = 0
            totalElapsedMS = totalMS
            // `running_since` stays the last start; only the measuring point
            // moves, to the moment the new lap began at 0.
            elapsedAsOf = completedAt
        case .reset:
            self = .initial
        }
    }

    /// Applies `events` in order and returns them, for `perform`.
    mutating func record(_ events: [LapEvent]) -> [DomainEvent] {
        events.map { event in
            apply(event)
            return event.domainEvent
        }
    }
}
