import Foundation
import OutaTimeProtocol

/// The dispatch board's clock: no ticks, one wake at the next departure or
/// arrival. Storage: events, with the whole board once per as many events
/// as it holds dispatches (at least 64), so a `dispatch` costs O(1) in the
/// board's size, amortised.
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

    /// Its dispatches.
    public var itemCount: Int { dispatches.count }

    /// A dispatch with a 100-station path, a `created_by` (a display name,
    /// 100 characters) and a `note` (100 characters) of 400 bytes each with
    /// every character a `"`, the longest model and status, and 19-digit
    /// integers (PROTOCOL.md §11, "Frame bounds").
    public static var maxItemBytes: Int { 1_342 }

    /// `dispatched` of such a dispatch.
    public static var maxEventDataBytes: Int { 1_354 }

    /// As many events as the board holds dispatches, at least 64.
    public var eventsPerStoredState: Int64 { max(64, Int64(dispatches.count)) }
}
