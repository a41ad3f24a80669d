import Foundation
import OutaTimeProtocol

/// The authoritative state of one channel: one case per kind.
///
/// A value type owned by the server's loop thread; the server replaces it with
/// the new state an action returns. Its JSON form (``json()``) is what `get`
/// and `subscribe` send and what the store keeps as text.
public enum ChannelState: Sendable, Equatable {
    /// `delorean/<car>`: time circuits.
    case delorean(DeLoreanState)
    /// `starport/<board>`: dispatch board.
    case starport(StarportState)
    /// `timers/<list>`: countdown timers.
    case timers(TimerListState)
    /// `laps/<session>`: lap stopwatch.
    case laps(LapSessionState)

    /// The state a channel of `kind` has when it is created. `now` is taken
    /// as a parameter (not read from a clock here) to keep the domain pure:
    /// only the DeLorean uses it, as its present time.
    public static func initial(kind: ChannelKind, now: Date) -> ChannelState {
        switch kind {
        case .delorean: .delorean(.initial(now: now))
        case .starport: .starport(.initial)
        case .timers: .timers(.initial)
        case .laps: .laps(.initial)
        }
    }

    /// The kind this state belongs to.
    public var kind: ChannelKind {
        switch self {
        case .delorean: .delorean
        case .starport: .starport
        case .timers: .timers
        case .laps: .laps
        }
    }
}

/// A stored or received state that does not match its kind's shape.
public struct StateDecodingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind the JSON was read as.
    public var kind: ChannelKind
    /// What was wrong, naming the offending key where the decoder knows it.
    public var message: String

    /// Creates an error for `kind` with a human-readable message.
    public init(kind: ChannelKind, message: String) {
        self.kind = kind
        self.message = message
    }

    /// `invalid <kind> state: <message>`, for logs.
    public var description: String { "invalid \(kind.rawValue) state: \(message)" }
}
