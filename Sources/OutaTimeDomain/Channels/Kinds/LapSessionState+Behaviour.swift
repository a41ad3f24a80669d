import Foundation
import OutaTimeProtocol

/// The lap stopwatch's clock: a tick every `--lap-tick-ms` while running,
/// only the newest after a stall (a tick only shows the time). Its events
/// carry absolute values, so the state is stored with every 64th event only
/// and rebuilt exactly from the log (storing it with every command was a
/// quarter of the writer's work under load, docs/BENCHMARKS.md).
extension LapSessionState {
    /// `laps`.
    public static var kind: ChannelKind { .laps }

    /// A stopwatch at zero.
    public static func initialState(now: Date) -> LapSessionState { .initial }

    /// Ticks every `--lap-tick-ms` while running.
    public func clockPlan(_ intervals: TickIntervals) -> ClockPlan {
        guard status == .running else { return .idle }
        return ClockPlan(ticks: TickSeries(intervalMs: intervals.lapsMs, catchUp: .newestOnly))
    }

    /// The elapsed times as of `time`.
    public mutating func tick(at time: Date) -> TickOutcome {
        TickOutcome(push: tick(at: time) as JSONValue?)
    }

    /// Nothing: a running stopwatch keeps running across a restart.
    public mutating func recoverAfterRestart(at now: Date, aliveUntil: Date?) -> [DomainEvent] {
        recoverAfterRestart(at: now)
    }

    /// Its completed laps.
    public var itemCount: Int { laps.count }

    /// `{"lap":…,"time_ms":…}` with 19-digit integers (PROTOCOL.md §11,
    /// "Frame bounds").
    public static var maxItemBytes: Int { 58 }

    /// `lap_completed` with 19-digit integers.
    public static var maxEventDataBytes: Int { 277 }

    /// At most 64 events after the stored state (well under the 1,000
    /// events of history the contract keeps).
    public var eventsPerStoredState: Int64 { 64 }
}
