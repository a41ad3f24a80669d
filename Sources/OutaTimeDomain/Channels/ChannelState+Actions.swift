import Foundation
import OutaTimeProtocol

/// ``ChannelState`` forwards to its kind's ``ChannelBehaviour``: clients and
/// tests that hold a state of any kind use the same rules as the server.
extension ChannelState {
    /// The state's rules and data.
    public var behaviour: any ChannelBehaviour {
        switch self {
        case .delorean(let state): state
        case .starport(let state): state
        case .timers(let state): state
        case .laps(let state): state
        }
    }

    /// Wraps a state of any kind.
    public init(_ behaviour: any ChannelBehaviour) {
        switch behaviour {
        case let state as DeLoreanState: self = .delorean(state)
        case let state as StarportState: self = .starport(state)
        case let state as TimerListState: self = .timers(state)
        case let state as LapSessionState: self = .laps(state)
        default: preconditionFailure("unknown channel behaviour \(type(of: behaviour))")
        }
    }

    /// Runs `change` on the kind's state in place: the enum lets go of its
    /// copy first, so the state's arrays are uniquely referenced and not
    /// copied (a copy per command would cost O(size of the channel)).
    private mutating func mutate<Result, Failure: Error>(
        _ change: (inout any ChannelBehaviour) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        var state = behaviour
        self = .laps(.initial)
        defer { self = ChannelState(state) }
        return try change(&state)
    }

    /// The access of `action` on a channel of `kind`, or nil if the kind has
    /// no such action.
    public static func access(kind: ChannelKind, action: String) -> ActionAccess? {
        kind.access(of: action)
    }

    /// `unknown_action` naming the action and the kind's valid actions.
    public static func unknownAction(_ action: String, kind: ChannelKind) -> ProtocolError {
        kind.behaviour.unknownAction(action)
    }

    /// Performs a known action; on a throw the state is unchanged.
    public mutating func perform(_ action: String, _ args: ActionArgs, _ context: ActionContext) throws(ProtocolError) -> ActionOutcome {
        try mutate { (state) throws(ProtocolError) in try state.perform(action, args, context) }
    }

    /// Applies a stored or received event (replay, client-side recovery).
    public mutating func apply(_ event: DomainEvent, at time: Date) {
        mutate { $0.apply(event, at: time) }
    }

    /// The `state` sent to clients, with live values as of `now`.
    public func snapshot(at now: Date) -> JSONValue {
        behaviour.snapshot(at: now)
    }

    /// The `state` sent to clients at `now`, typed (see ``ChannelBehaviour/wireState(at:)``).
    public func wireState(at now: Date) -> any Encodable & Sendable {
        behaviour.wireState(at: now)
    }

    /// The text the store keeps: live values baked in as of `now` (a running
    /// countdown's remaining time, for instance).
    public func storedText(at now: Date) -> String {
        behaviour.storedText(at: now)
    }

    /// Called once per channel when the server starts: what could not survive
    /// the restart (an acceleration, running countdowns, passed departures).
    public mutating func recoverAfterRestart(at now: Date) -> [DomainEvent] {
        mutate { $0.recoverAfterRestart(at: now, aliveUntil: nil) }
    }

    /// A session stopped watching the channel (unsubscribe or disconnect):
    /// timers it was viewing may pause.
    public mutating func release(session: String, at now: Date) -> [DomainEvent] {
        mutate { $0.release(session: session, at: now) }
    }
}
