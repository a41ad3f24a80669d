import Foundation
import OutaTimeProtocol

/// The runtime indexes of a board, kept in step with ``StarportState/board``
/// so that a command, `nextStatusChange()` and `advance(to:)` cost O(1) or
/// O(log n) instead of a pass over every dispatch (with two date parses
/// each). Every change of a dispatch goes through ``putDispatch(_:)`` or
/// ``setStatus(_:at:)``, which push its pending moments and mark the ones
/// it has left behind as stale.
extension StarportState {
    /// Rebuilds every index from ``board``: O(n), after decoding or after
    /// the whole array was replaced.
    mutating func rebuildIndexes() {
        // A board read from elsewhere could repeat an id: the first one wins,
        // as it did for the linear search this replaces.
        positions = Dictionary(board.enumerated().map { ($1.id, $0) }, uniquingKeysWith: { first, _ in first })
        moments = board.map(DispatchMoments.init)
        highestID = board.map(\.id).max() ?? 0
        pending = DueQueue(board.indices.flatMap { pendingChanges(at: $0) })
    }

    /// Adds `dispatch`, or replaces the one with its id.
    mutating func putDispatch(_ dispatch: Dispatch) {
        let position: Int
        if let existing = positions[dispatch.id] {
            position = existing
            // Its old entries go stale, or duplicate the ones pushed below.
            pending.markStale(pendingCount(at: position))
            board[position] = dispatch
            moments[position] = DispatchMoments(dispatch)
        } else {
            position = board.count
            positions[dispatch.id] = position
            board.append(dispatch)
            moments.append(DispatchMoments(dispatch))
        }
        highestID = max(highestID, dispatch.id)
        for change in pendingChanges(at: position) { pending.insert(change) }
        dropStaleChanges()
    }

    /// Sets the status of the dispatch at `position`.
    mutating func setStatus(_ status: Dispatch.Status, at position: Int) {
        let old = board[position].status
        let oldCount = pendingCount(at: position)
        board[position].status = status
        let newCount = pendingCount(at: position)
        if newCount < oldCount { pending.markStale(oldCount - newCount) }
        // The entries pushed with the dispatch cover its moves forward. A
        // status set back (only a hand-made event does that) needs them anew.
        let movedBack = (status == .scheduled && old != .scheduled)
            || (status == .inFlight && old != .scheduled && old != .inFlight)
        if movedBack {
            for change in pendingChanges(at: position) { pending.insert(change) }
        }
        dropStaleChanges()
    }

    /// The status changes still ahead of the dispatch at `position`, as
    /// `Dispatch.pendingChanges` gives them, from the parsed dates.
    func pendingChanges(at position: Int) -> [PendingChange] {
        let dispatch = board[position]
        var changes: [PendingChange] = []
        if dispatch.status == .scheduled, let departure = moments[position].departure {
            changes.append(PendingChange(at: departure, id: dispatch.id, arrival: false))
        }
        if dispatch.status == .scheduled || dispatch.status == .inFlight, let arrival = moments[position].arrival {
            changes.append(PendingChange(at: arrival, id: dispatch.id, arrival: true))
        }
        return changes
    }

    /// How many status changes are still ahead of the dispatch at `position`
    /// (`pendingChanges(at:).count`, without building them).
    private func pendingCount(at position: Int) -> Int {
        switch board[position].status {
        case .scheduled: (moments[position].departure != nil ? 1 : 0) + (moments[position].arrival != nil ? 1 : 0)
        case .inFlight: moments[position].arrival != nil ? 1 : 0
        case .arrived, .cancelled: 0
        }
    }

    /// Whether `change` is still ahead: the dispatch has not moved past it,
    /// was not cancelled, and still has that moment.
    func isPending(_ change: PendingChange) -> Bool {
        guard let position = positions[change.id] else { return false }
        switch (change.arrival, board[position].status) {
        case (false, .scheduled): return moments[position].departure == change.at
        case (true, .scheduled), (true, .inFlight): return moments[position].arrival == change.at
        default: return false
        }
    }

    /// Drops stale entries from the top of the heap; called after every
    /// change, so that `nextStatusChange()` can read the top without
    /// changing anything. Free when nothing went stale.
    mutating func dropStaleChanges() {
        // Taken out while it is cleaned, so the test can read `self`.
        var queue = pending
        pending = DueQueue()
        queue.dropStale(keeping: isPending)
        pending = queue
    }
}

/// A dispatch's `departs_at` and `arrives_at` as dates (nil only for text
/// this server did not write).
struct DispatchMoments: Sendable {
    var departure: Date?
    var arrival: Date?

    init(_ dispatch: Dispatch) {
        departure = dispatch.departureDate
        arrival = dispatch.arrivalDate
    }
}

/// A departure (→ `in_flight`) or arrival (→ `arrived`) still ahead. Ordered
/// as `advance` emits them: by time, then by id, departure before arrival.
struct PendingChange: Comparable, Hashable, Sendable {
    /// When.
    var at: Date
    /// The dispatch.
    var id: Int
    /// An arrival; otherwise a departure.
    var arrival: Bool

    /// The status the dispatch takes.
    var status: Dispatch.Status { arrival ? .arrived : .inFlight }

    static func < (lhs: PendingChange, rhs: PendingChange) -> Bool {
        (lhs.at, lhs.id, lhs.arrival ? 1 : 0) < (rhs.at, rhs.id, rhs.arrival ? 1 : 0)
    }
}
