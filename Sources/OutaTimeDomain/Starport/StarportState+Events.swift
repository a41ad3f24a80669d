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

    /// `dispatched {dispatch}`.
    static func dispatched(_ dispatch: Dispatch) -> DomainEvent {
        DomainEvent(EventName.dispatched, .object(["dispatch": dispatch.json]))
    }

    /// `cancelled {id}`.
    static func cancelled(id: Int) -> DomainEvent {
        DomainEvent(EventName.cancelled, .object(["id": .int(Int64(id))]))
    }

    /// `status_changed {id, status, at}`. `at` (beyond domain.md) tells a
    /// client that receives it late, e.g. after a restart, when it was due.
    static func statusChanged(_ change: Dispatch.StatusChange) -> DomainEvent {
        DomainEvent(EventName.statusChanged, .object([
            "id": .int(Int64(change.id)),
            "status": .string(change.status.rawValue),
            "at": .string(ISOTime.format(change.at)),
        ]))
    }

    /// Applies one event. The board has no live values, so `now` is not
    /// needed; it is taken for the shape shared by every kind.
    ///
    /// Events this kind does not know, ids not on the board and malformed
    /// data leave the state unchanged rather than trap: a replay over stored
    /// history must not bring the server down. Re-applying an event gives
    /// the same state (`dispatched` replaces by id).
    public mutating func apply(_ event: DomainEvent, at now: Date) {
        guard case .object(let data) = event.data else { return }
        switch event.name {
        case EventName.dispatched:
            guard let value = data["dispatch"], let dispatch = Dispatch(json: value) else { return }
            putDispatch(dispatch)
        case EventName.cancelled:
            setStatus(.cancelled, id: data["id"])
        case EventName.statusChanged:
            guard case .string(let text)? = data["status"], let status = Dispatch.Status(rawValue: text) else { return }
            setStatus(status, id: data["id"])
        default:
            return
        }
    }

    /// The `state` sent to clients: `{dispatches: [...]}` with every key of
    /// every dispatch. Statuses are as stored: they move only by events, so
    /// that a snapshot plus the events after it is always consistent.
    public func snapshot(at now: Date) -> JSONValue {
        .object(["dispatches": .array(board.map(\.json))])
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

    private mutating func setStatus(_ status: Dispatch.Status, id value: JSONValue?) {
        guard case .int(let number)? = value, let id = Int(exactly: number),
              let position = positions[id] else { return }
        setStatus(status, at: position)
    }
}
