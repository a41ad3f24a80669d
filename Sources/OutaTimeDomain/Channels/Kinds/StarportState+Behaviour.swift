import Foundation
import OutaTimeProtocol

/// The dispatch board's clock: no ticks, one wake at the next departure or
/// arrival.
extension StarportState {
    /// `starport`.
    public static var kind: ChannelKind { .starport }

    /// An empty board.
    public static func initialState(now: Date) -> StarportState { .initial }

    /// Wakes at the next departure or arrival.
    public func clockPlan(_ intervals: TickIntervals) -> ClockPlan {
        ClockPlan(nextChange: nextStatusChange())
    }

    /// Departures and arrivals that passed while the server was down.
    public mutating func recoverAfterRestart(at now: Date, aliveUntil: Date?) -> [DomainEvent] {
        advance(to: now)
    }

    /// Every commit.
    public var eventsPerStoredState: Int64 { 1 }
}
