import Foundation
import OutaTimeProtocol

/// The timer list's clock: while a countdown runs, a tick every second on
/// the countdowns' own seconds (only the newest after a stall), and a wake
/// at the next finish. `start` and `stop` make the connection a viewer.
extension TimerListState {
    /// `timers`.
    public static var kind: ChannelKind { .timers }

    /// `start` and `stop` make the connection a viewer of a countdown.
    public static var viewerActions: Set<String> { ["start", "stop"] }

    /// An empty list.
    public static func initialState(now: Date) -> TimerListState { .initial }

    /// Running countdowns are stored at least this often, in ticks
    /// (domain: a crash loses at most 5 s).
    public static let storeEveryTicks: UInt64 = 5

    /// While a countdown runs: ticks each second from the earliest running
    /// countdown's start (each tick shows a whole second gone) and a wake at
    /// the next finish.
    public func clockPlan(_ intervals: TickIntervals) -> ClockPlan {
        guard let finish = nextFinish() else { return .idle }
        let anchor = runningTimers.compactMap(\.countdown?.since).min()
        return ClockPlan(ticks: TickSeries(intervalMs: 1000, anchor: anchor, catchUp: .newestOnly,
                                           storeEveryTicks: Self.storeEveryTicks),
                         nextChange: finish)
    }

    /// The remaining times of the tick's own second, not of the moment it is
    /// processed: a late tick still shows each countdown exactly one second
    /// on from the previous one. (Half a millisecond past it, so rounding
    /// never puts it before its second.)
    public mutating func tick(at time: Date) -> TickOutcome {
        TickOutcome(push: tickData(at: time.addingTimeInterval(0.0005)))
    }

    /// Running countdowns pause at their stored values (``recoverAfterRestart(at:)``).
    public mutating func recoverAfterRestart(at now: Date, aliveUntil: Date?) -> [DomainEvent] {
        recoverAfterRestart(at: now)
    }

    /// Each running countdown's live remaining time baked in (``checkpoint(at:)``).
    public func stored(at now: Date) -> TimerListState { checkpoint(at: now) }

    /// Every commit for now: a state rebuilt from events carries the
    /// countdowns' running bases, which the restart rule must not count
    /// past the previous server's last moment.
    public var eventsPerStoredState: Int64 { 1 }
}
