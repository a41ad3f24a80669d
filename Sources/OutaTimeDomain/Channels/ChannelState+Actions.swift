import Foundation
import OutaTimeProtocol

/// One entry point per concern for the server: it never switches on kinds
/// for actions, snapshots or restarts; only the clocks (``ChannelState+Clock``)
/// differ per kind.
extension ChannelState {
    /// The access of `action` on a channel of `kind`, or nil if the kind has
    /// no such action.
    public static func access(kind: ChannelKind, action: String) -> ActionAccess? {
        switch kind {
        case .delorean: DeLoreanState.actions[action]
        case .starport: StarportState.actions[action]
        case .timers: TimerListState.actions[action]
        case .laps: LapSessionState.actions[action]
        }
    }

    /// `unknown_action` naming the action and the kind's valid actions.
    public static func unknownAction(_ action: String, kind: ChannelKind) -> ProtocolError {
        switch kind {
        case .delorean: DeLoreanState.unknownAction(action, kind: kind)
        case .starport: StarportState.unknownAction(action, kind: kind)
        case .timers: TimerListState.unknownAction(action, kind: kind)
        case .laps: LapSessionState.unknownAction(action, kind: kind)
        }
    }

    /// Performs a known action; on a throw the state is unchanged.
    public mutating func perform(_ action: String, _ args: ActionArgs, _ context: ActionContext) throws(ProtocolError) -> ActionOutcome {
        switch self {
        case .delorean(var state):
            let outcome = try state.perform(action, args, context)
            self = .delorean(state)
            return outcome
        case .starport(var state):
            let outcome = try state.perform(action, args, context)
            self = .starport(state)
            return outcome
        case .timers(var state):
            let outcome = try state.perform(action, args, context)
            self = .timers(state)
            return outcome
        case .laps(var state):
            let outcome = try state.perform(action, args, context)
            self = .laps(state)
            return outcome
        }
    }

    /// Applies a stored or received event (replay, client-side recovery).
    public mutating func apply(_ event: DomainEvent, at time: Date) {
        switch self {
        case .delorean(var state): state.apply(event, at: time); self = .delorean(state)
        case .starport(var state): state.apply(event, at: time); self = .starport(state)
        case .timers(var state): state.apply(event, at: time); self = .timers(state)
        case .laps(var state): state.apply(event, at: time); self = .laps(state)
        }
    }

    /// The `state` sent to clients, with live values as of `now`.
    public func snapshot(at now: Date) -> JSONValue {
        switch self {
        case .delorean(let state): state.snapshot(at: now)
        case .starport(let state): state.snapshot(at: now)
        case .timers(let state): state.snapshot(at: now)
        case .laps(let state): state.snapshot(at: now)
        }
    }

    /// The text the store keeps: live values baked in as of `now` (a running
    /// countdown's remaining time, for instance).
    public func storedText(at now: Date) -> String {
        switch self {
        case .timers(let state): ChannelState.timers(state.checkpoint(at: now)).jsonText()
        default: jsonText()
        }
    }

    /// Called once per channel when the server starts: what could not survive
    /// the restart (an acceleration, running countdowns, passed departures).
    public mutating func recoverAfterRestart(at now: Date) -> [DomainEvent] {
        switch self {
        case .delorean(var state):
            let events = state.recoverAfterRestart(at: now)
            self = .delorean(state)
            return events
        case .starport(var state):
            let events = state.advance(to: now)
            self = .starport(state)
            return events
        case .timers(var state):
            let events = state.recoverAfterRestart(at: now)
            self = .timers(state)
            return events
        case .laps:
            return []
        }
    }

    /// A session stopped watching the channel (unsubscribe or disconnect):
    /// timers it was viewing may pause.
    public mutating func release(session: String, at now: Date) -> [DomainEvent] {
        guard case .timers(var state) = self else { return [] }
        let events = state.release(session: session, at: now)
        self = .timers(state)
        return events
    }
}
