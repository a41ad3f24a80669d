import Foundation
import OutaTimeProtocol

/// The DeLorean's clock: while accelerating, one speed step per tick, every
/// missed tick played (a trip is always 88 speeds, then the time travel).
/// Its state is small and fixed in size, so it is stored with every commit.
extension DeLoreanState {
    /// `delorean`.
    public static var kind: ChannelKind { .delorean }

    /// A parked car in `now`'s present.
    public static func initialState(now: Date) -> DeLoreanState { .initial(now: now) }

    /// Ticks every `--delorean-tick-ms` while accelerating.
    public func clockPlan(_ intervals: TickIntervals) -> ClockPlan {
        guard isAccelerating else { return .idle }
        return ClockPlan(ticks: TickSeries(intervalMs: intervals.deloreanMs, catchUp: .everyTick))
    }

    /// One acceleration step (``accelerate(at:)``).
    public mutating func tick(at time: Date) -> TickOutcome {
        let (push, events) = accelerate(at: time)
        return TickOutcome(push: push, events: events)
    }

    /// An acceleration under way is aborted (``recoverAfterRestart(at:)``).
    public mutating func recoverAfterRestart(at now: Date, aliveUntil: Date?) -> [DomainEvent] {
        recoverAfterRestart(at: now)
    }

    /// `time_travel`: two times and a speed.
    public static var maxEventDataBytes: Int { 92 }

    /// Every commit.
    public var eventsPerStoredState: Int64 { 1 }
}
