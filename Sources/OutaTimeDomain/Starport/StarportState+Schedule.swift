import Foundation
import OutaTimeProtocol

/// The server-side moments of a board (domain.md): a dispatch goes
/// `scheduled` → `in_flight` at `departs_at` and → `arrived` at `arrives_at`.
/// The server's scheduler asks for the next moment, waits, then calls
/// ``advance(to:)``; after a restart it calls `advance` once with the current
/// time, which catches up on everything that fell due while it was down.
extension StarportState {
    /// The earliest moment a status will change by itself: the `departs_at`
    /// of a scheduled dispatch or the `arrives_at` of one in flight. Nil when
    /// nothing is pending. May lie in the past (the server was down, or
    /// `departs_at` was given in the past): `advance` at once then. O(1):
    /// the top of a heap.
    public func nextStatusChange() -> Date? {
        pending.first?.at
    }

    /// Every status change due by `now` (moment ≤ now), in time order, as
    /// `status_changed` events already applied to the board. A dispatch
    /// whose departure and arrival both passed yields `in_flight` then
    /// `arrived`. Equal moments are ordered by id, then departure before
    /// arrival, so replays produce the same sequence. Costs O(log n) per
    /// change due, nothing for the dispatches still waiting.
    public mutating func advance(to now: Date) -> [DomainEvent] {
        var events: [DomainEvent] = []
        // The top is always a change still ahead: applying it makes the
        // entry stale, and `apply` drops it.
        while let change = pending.first, change.at <= now {
            events.append(record(.statusChanged(Dispatch.StatusChange(id: change.id, status: change.status, at: change.at))))
            if pending.first == change { pending.removeFirst() }
        }
        return events
    }
}

/// A dispatch's two moments. Times are stored as wire text (whole seconds),
/// so the dates are parsed from it: what a client sees is exactly what the
/// schedule runs on.
extension Dispatch {
    /// A moment at which a dispatch's status moves forward by itself.
    public struct StatusChange: Sendable, Equatable {
        /// The dispatch.
        public var id: Int
        /// The status it takes: `in_flight` or `arrived`.
        public var status: Status
        /// When (`departs_at` or `arrives_at`).
        public var at: Date
    }

    /// `departs_at` as a date; nil only for text this server did not write.
    public var departureDate: Date? { ISOTime.parse(departsAt) }

    /// `arrives_at` as a date; nil only for text this server did not write.
    public var arrivalDate: Date? { ISOTime.parse(arrivesAt) }

    /// The status changes still ahead of this dispatch, in time order:
    /// departure then arrival for a scheduled one, arrival for one in flight,
    /// none once arrived or cancelled.
    public var pendingChanges: [StatusChange] {
        var changes: [StatusChange] = []
        if status == .scheduled, let departure = departureDate {
            changes.append(StatusChange(id: id, status: .inFlight, at: departure))
        }
        if status == .scheduled || status == .inFlight, let arrival = arrivalDate {
            changes.append(StatusChange(id: id, status: .arrived, at: arrival))
        }
        return changes
    }

    /// The status this dispatch has at `now` once every change due by then
    /// is applied. Lets `cancel` refuse a ship that has landed even if the
    /// scheduler has not yet emitted its `arrived`.
    public func status(at now: Date) -> Status {
        pendingChanges.last(where: { $0.at <= now })?.status ?? status
    }
}
