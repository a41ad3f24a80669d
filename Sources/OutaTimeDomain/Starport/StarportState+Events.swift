import Foundation
import OutaTimeProtocol

/// Event sourcing for the board: every change is one of three events, and
/// ``apply(_:at:)`` is the only code that changes `dispatches`. The server
/// applies them as it performs; a client holding a snapshot applies the
/// same events from `history` and reaches the same board.
///
/// | event | data | effect |
/// |---|---|---|
/// | `dispatched` | `{dispatch}` (the whole dispatch) | adds it (or replaces one with its id) |
/// | `cancelled` | `{id}` | status `cancelled` |
/// | `status_changed` | `{id, status, at}` | status `in_flight` or `arrived`; `at` is the moment it was due |
extension StarportState {
    /// Names of the board's events.
    public enum EventName {
        /// A new dispatch: data `{dispatch}`.
        public static let dispatched = "dispatched"
        /// A dispatch was cancelled: data `{id}`.
        public static let cancelled = "cancelled"
        /// The server moved a dispatch on at its departure or arrival:
        /// data `{id, status, at}`.
        public static let statusChanged = "status_changed"
    }

    /// Applies one event read back (a replay, a client's copy). The board
    /// has no live values, so `now` is not needed; it is taken for the shape
    /// shared by every kind.
    ///
    /// Events this kind does not know, ids not on the board and malformed
    /// data leave the state unchanged rather than trap: a replay over stored
    /// history must not bring the server down. Re-applying an event gives
    /// the same state (`dispatched` replaces by id).
    public mutating func apply(_ event: DomainEvent, at now: Date) {
        guard let event = StarportEvent(event) else { return }
        apply(event)
    }

    /// Applies a typed event: the only code that changes `dispatches`.
    mutating func apply(_ event: StarportEvent) {
        switch event {
        case .dispatched(let dispatch):
            putDispatch(dispatch)
        case .cancelled(let id):
            setStatus(.cancelled, id: id)
        case .statusChanged(let change):
            setStatus(change.status, id: change.id)
        }
    }

    /// Applies `event` and returns it, its data encoded once, for `perform`
    /// and `advance`.
    mutating func record(_ event: StarportEvent) -> DomainEvent {
        apply(event)
        return event.domainEvent
    }

    /// The `state` sent to clients: `{dispatches: [...]}` with every key of
    /// every dispatch. Statuses are as stored: they move only by events, so
    /// that a snapshot plus the events after it is always consistent.
    public func wireState(at now: Date) -> any Encodable & Sendable {
        Snapshot(dispatches: board)
    }

    /// The `state` of a board as clients see it (``wireState(at:)``).
    struct Snapshot: JSONPayload {
        let dispatches: [Dispatch]

        /// `dispatches`, each whole.
        func writeFields(to fields: inout JSONFields) throws {
            try fields.write("dispatches", dispatches)
        }
    }

    /// Reads a board from a snapshot (as written by ``snapshot(at:)``); nil
    /// when it is not an object with a `dispatches` array of dispatches.
    public init?(snapshot: JSONValue) {
        guard case .object(let fields) = snapshot, case .array(let list)? = fields["dispatches"] else { return nil }
        var dispatches: [Dispatch] = []
        for value in list {
            guard let dispatch = Dispatch(json: value) else { return nil }
            dispatches.append(dispatch)
        }
        self.init(dispatches: dispatches)
    }

    private mutating func setStatus(_ status: Dispatch.Status, id: Int) {
        guard let position = positions[id] else { return }
        setStatus(status, at: position)
    }
}

/// The board's events, typed: ``StarportState/record(_:)`` applies one and
/// encodes its data once; ``init(_:)`` reads one back.
enum StarportEvent: Sendable, Equatable, JSONPayload {
    /// `dispatched {dispatch}`: the whole dispatch.
    case dispatched(Dispatch)
    /// `cancelled {id}`.
    case cancelled(id: Int)
    /// `status_changed {id, status, at}`. `at` (beyond domain.md) tells a
    /// client that receives it late, e.g. after a restart, when it was due.
    case statusChanged(Dispatch.StatusChange)

    /// The event's name on the wire.
    var name: String {
        switch self {
        case .dispatched: StarportState.EventName.dispatched
        case .cancelled: StarportState.EventName.cancelled
        case .statusChanged: StarportState.EventName.statusChanged
        }
    }

    /// The event, its data encoded once.
    var domainEvent: DomainEvent { DomainEvent(name, encoding: self) }

    /// The data object, as ``init(_:)`` reads it.
    func writeFields(to fields: inout JSONFields) throws {
        switch self {
        case .dispatched(let dispatch):
            try fields.write("dispatch", dispatch)
        case .cancelled(let id):
            fields.write("id", id)
        case .statusChanged(let change):
            fields.write("id", change.id)
            fields.write("status", change.status.rawValue)
            fields.write("at", ISOTime.format(change.at))
        }
    }

    /// Reads an event; nil for a name the board does not have or data it
    /// cannot use. `status_changed` needs only `id` and `status`.
    init?(_ event: DomainEvent) {
        guard case .object(let data) = event.data else { return nil }
        func id() -> Int? {
            if case .int(let number)? = data["id"] { Int(exactly: number) } else { nil }
        }
        switch event.name {
        case StarportState.EventName.dispatched:
            guard let value = data["dispatch"], let dispatch = Dispatch(json: value) else { return nil }
            self = .dispatched(dispatch)
        case StarportState.EventName.cancelled:
            guard let id = id() else { return nil }
            self = .cancelled(id: id)
        case StarportState.EventName.statusChanged:
            guard let id = id(), case .string(let text)? = data["status"],
                  let status = Dispatch.Status(rawValue: text) else { return nil }
            let at = (data["at"]).flatMap { value -> Date? in
                if case .string(let text) = value { ISOTime.parse(text) } else { nil }
            } ?? Date(timeIntervalSince1970: 0)
            self = .statusChanged(Dispatch.StatusChange(id: id, status: status, at: at))
        default:
            return nil
        }
    }
}
