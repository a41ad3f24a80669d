import Foundation

/// The runtime indexes of a timer list, kept in step with ``TimerListState/list``
/// so that a command, `nextFinish()` and `advance(to:)` cost O(1) or
/// O(log n) instead of a pass over every timer.
///
/// Every change of a timer goes through the helpers here: ``appendTimer(_:)``,
/// ``removeTimer(at:)``, ``changeTimer(at:_:)`` and the viewer helpers. They
/// push a new countdown's moments and mark the old ones stale; the heaps
/// drop them at the end of each event (``dropStaleMoments()``).
extension TimerListState {
    /// Rebuilds every index from ``list``: O(n), after decoding or after the
    /// whole array was replaced.
    mutating func rebuildIndexes() {
        // A list read from elsewhere could repeat an id: the first one wins,
        // as it did for the linear search this replaces.
        positions = Dictionary(list.enumerated().map { ($1.id, $0) }, uniquingKeysWith: { first, _ in first })
        let running = list.compactMap { timer in timer.status == .running ? timer.countdown.map { (timer.id, $0) } : nil }
        deadlines = DueQueue(running.map { Moment(at: $1.deadline, id: $0) })
        starts = DueQueue(running.map { Moment(at: $1.since, id: $0) })
        viewing = [:]
        for timer in list {
            for session in timer.viewerSessions { viewing[session, default: []].insert(timer.id) }
        }
    }

    /// Appends `timer` (its id not yet on the list).
    mutating func appendTimer(_ timer: CountdownTimer) {
        positions[timer.id] = list.count
        list.append(timer)
        noteCountdown(of: list.count - 1, before: nil)
        for session in timer.viewerSessions { viewing[session, default: []].insert(timer.id) }
    }

    /// Removes the timer at `position`. O(n): the timers after it move up
    /// one place, in the array and in ``positions``. A remove is rare next
    /// to the other commands, and the list order is on the wire.
    mutating func removeTimer(at position: Int) {
        let removed = list.remove(at: position)
        positions[removed.id] = nil
        if removed.status == .running && removed.countdown != nil { markMomentsStale() }
        // Backwards, so that a repeated id (see `rebuildIndexes`) ends on its first place.
        for later in (position..<list.count).reversed() {
            positions[list[later].id] = later
        }
    }

    /// Runs `change` on the timer at `position` in place, then records a
    /// new countdown base in the heaps, and the old one as stale.
    mutating func changeTimer(at position: Int, _ change: (inout CountdownTimer) -> Void) {
        let before = list[position].status == .running ? list[position].countdown : nil
        change(&list[position])
        if before != nil, list[position].status != .running || list[position].countdown != before {
            markMomentsStale()
        }
        noteCountdown(of: position, before: before)
    }

    /// A running countdown's base is gone: its two moments are stale.
    private mutating func markMomentsStale() {
        deadlines.markStale()
        starts.markStale()
    }

    /// Pushes the timer's base into the heaps when it runs on a base it did
    /// not have `before`. The entries of the old base go stale by themselves.
    private mutating func noteCountdown(of position: Int, before: CountdownTimer.Countdown?) {
        // Field by field: a copy of the whole timer would retain its strings.
        guard list[position].status == .running, let countdown = list[position].countdown,
              countdown != before else { return }
        let id = list[position].id
        deadlines.insert(Moment(at: countdown.deadline, id: id))
        starts.insert(Moment(at: countdown.since, id: id))
    }

    /// Drops stale entries from the tops of the heaps; called after every
    /// event, so that `nextFinish()` and `earliestRunningSince` can read the
    /// tops without changing anything. Free when nothing went stale.
    mutating func dropStaleMoments() {
        let list = list, positions = positions
        func countdown(_ id: Int) -> CountdownTimer.Countdown? {
            guard let position = positions[id], list[position].status == .running else { return nil }
            return list[position].countdown
        }
        deadlines.dropStale { countdown($0.id)?.deadline == $0.at }
        starts.dropStale { countdown($0.id)?.since == $0.at }
    }

    /// `session` becomes a viewer of the timer at `position`; false when it
    /// already was one.
    mutating func addViewer(_ session: String, at position: Int) -> Bool {
        guard list[position].addViewer(session) else { return false }
        viewing[session, default: []].insert(list[position].id)
        return true
    }

    /// `session` stops viewing the timer at `position`; false when it was
    /// not viewing it. ``viewing`` keeps the id (a stale entry, cheaper than
    /// a second hash lookup per `stop`) until the session is released.
    mutating func removeViewer(_ session: String, at position: Int) -> Bool {
        list[position].removeViewer(session)
    }

    /// The positions of the timers `session` may be viewing, in list order,
    /// and forgets them (the session is leaving the list).
    mutating func takeViewedPositions(of session: String) -> [Int] {
        guard let ids = viewing.removeValue(forKey: session) else { return [] }
        return ids.compactMap { positions[$0] }.sorted()
    }
}

/// A moment of one timer (its deadline or its start), ordered by time, then
/// by id: equal deadlines finish in id order.
struct Moment: Comparable, Hashable, Sendable {
    /// When.
    var at: Date
    /// The timer's id.
    var id: Int

    static func < (lhs: Moment, rhs: Moment) -> Bool {
        (lhs.at, lhs.id) < (rhs.at, rhs.id)
    }
}
