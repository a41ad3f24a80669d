import Foundation
import OutaTimeProtocol

/// Event sourcing for timer lists: every durable change is one of these
/// events, built by `perform` or the clock hooks and then applied, so a client
/// holding a snapshot reaches the same state by applying the same events.
///
/// Viewer identities are the exception: they are runtime presence, not durable
/// state, so `perform`/`release` change them directly and no event names a
/// session. Only the first viewer's arrival and the last one's departure are
/// events (`timer_started`, `timer_stopped`); a second viewer joining changes
/// the `viewers` count without an event.
extension TimerListState {
    /// The durable events of a timer list.
    public enum EventName: String, Sendable, CaseIterable {
        /// `{timer}`: a new timer (its whole wire form).
        case timerAdded = "timer_added"
        /// `{timer, fields}`: the timer after the update, and which of
        /// `event`, `location`, `remaining_s` the update set.
        case timerUpdated = "timer_updated"
        /// `{id}`.
        case timerRemoved = "timer_removed"
        /// `{id, remaining_s}`: the first viewer arrived; counting down from
        /// `remaining_s` at the event's time.
        case timerStarted = "timer_started"
        /// `{id, remaining_s}`: the last viewer left (or the server restarted);
        /// paused at `remaining_s`.
        case timerStopped = "timer_stopped"
        /// `{id}`: the countdown reached 0.
        case timerFinished = "timer_finished"
    }

    /// Applies one event read back (a replay, a client's copy) that happened
    /// at `at`. Events this type did not write (an unknown name, malformed
    /// data, an id no longer present) are ignored: history is replayed as it
    /// is, and a newer server's events must not break an older client.
    public mutating func apply(_ event: DomainEvent, at: Date) {
        guard let event = TimerEvent(event) else { return }
        apply(event, at: at)
    }

    /// Applies a typed event; then cleans the heaps once.
    mutating func apply(_ event: TimerEvent, at: Date) {
        applyChange(event, at: at)
        dropStaleMoments()
    }

    /// The change itself.
    private mutating func applyChange(_ event: TimerEvent, at: Date) {
        switch event {
        case .added(let timer):
            guard index(of: timer.id) == nil else { return }
            var added = timer
            if added.status == .running {
                added.countdown = .init(since: at, remainingS: added.remainingS)
            }
            appendTimer(added)
            nextID = max(nextID, timer.id + 1)
        case .updated(let new, let fields):
            update(id: new.id) { $0.applyUpdate(from: new, fields: fields.map(Set.init), at: at) }
        case .removed(let id):
            // A loop for a list read from elsewhere that repeats the id.
            while let position = index(of: id) { removeTimer(at: position) }
        case .started(let id, let remaining):
            update(id: id) { timer in
                timer.status = .running
                timer.remainingS = remaining
                // Going on from the part of a second run before the pause.
                timer.countdown = .init(since: at.addingTimeInterval(-Double(timer.carriedMS) / 1000), remainingS: remaining)
                timer.carriedMS = 0
                // A client's copy learns of its first viewer here.
                timer.takeViewerCount(max(timer.viewers, 1))
            }
        case .stopped(let id, let remaining):
            update(id: id) { timer in
                timer.status = .stopped
                timer.carriedMS = timer.countdown.map { $0.remaining(at: at) == remaining ? $0.carriedMS(at: at) : 0 } ?? 0
                timer.remainingS = remaining
                timer.countdown = nil
                timer.clearViewers()
            }
        case .finished(let id):
            update(id: id) { $0.finish() }
        }
    }

    /// Runs `change` on the timer with `id`, if it exists.
    private mutating func update(id: Int, _ change: (inout CountdownTimer) -> Void) {
        guard let position = index(of: id) else { return }
        changeTimer(at: position, change)
    }

    /// `timer_started` for `timer` starting at `now`.
    static func started(_ timer: CountdownTimer, at now: Date) -> TimerEvent {
        .started(id: timer.id, remainingS: timer.remaining(at: now))
    }

    /// The event for a running timer that loses its last viewer at `now`:
    /// `timer_stopped`, or `timer_finished` when it is already at 0 (due, but
    /// not yet advanced), because a timer paused at 0 could only finish later.
    static func paused(_ timer: CountdownTimer, at now: Date) -> TimerEvent {
        paused(id: timer.id, remainingS: timer.remaining(at: now))
    }

    /// `timer_stopped` at `remainingS`, or `timer_finished` at 0.
    static func paused(id: Int, remainingS: Int) -> TimerEvent {
        remainingS == 0 ? .finished(id: id) : .stopped(id: id, remainingS: remainingS)
    }

    /// Applies `event` at `at` and returns it, its data encoded once, so
    /// builders read as one step.
    mutating func record(_ event: TimerEvent, at: Date) -> DomainEvent {
        apply(event, at: at)
        return event.domainEvent
    }
}

/// A timer list's events, typed: ``TimerListState/record(_:at:)`` applies
/// one and encodes its data once; ``init(_:)`` reads one back.
enum TimerEvent: Sendable, Equatable, JSONPayload {
    /// `timer_added {timer}`: the new timer's whole wire form (never running).
    case added(CountdownTimer)
    /// `timer_updated {timer, fields}`: the timer after the update, frozen
    /// at the moment of the event, and which fields the update set (nil:
    /// an event without the list, read as "everything").
    case updated(CountdownTimer, fields: [String]?)
    /// `timer_removed {id}`.
    case removed(id: Int)
    /// `timer_started {id, remaining_s}`.
    case started(id: Int, remainingS: Int)
    /// `timer_stopped {id, remaining_s}`.
    case stopped(id: Int, remainingS: Int)
    /// `timer_finished {id}`.
    case finished(id: Int)

    /// The event's name.
    var name: TimerListState.EventName {
        switch self {
        case .added: .timerAdded
        case .updated: .timerUpdated
        case .removed: .timerRemoved
        case .started: .timerStarted
        case .stopped: .timerStopped
        case .finished: .timerFinished
        }
    }

    /// The event, its data encoded once.
    var domainEvent: DomainEvent { DomainEvent(name.rawValue, encoding: self) }

    /// The data object, as ``init(_:)`` reads it. A timer is written in its
    /// wire form, which for a timer without a running countdown (every
    /// timer an event carries) is its stored form.
    func writeFields(to fields: inout JSONFields) throws {
        switch self {
        case .added(let timer):
            try fields.write("timer", timer)
        case .updated(let timer, let names):
            try fields.write("timer", timer)
            if let names { try fields.write("fields", names) }
        case .removed(let id), .finished(let id):
            fields.write("id", id)
        case .started(let id, let remaining), .stopped(let id, let remaining):
            fields.write("id", id)
            fields.write("remaining_s", remaining)
        }
    }

    /// Reads an event; nil for a name this kind does not have or data it
    /// cannot use.
    init?(_ event: DomainEvent) {
        guard let name = TimerListState.EventName(rawValue: event.name) else { return nil }
        let data = TimerJSON.fields(event.data)
        func id() -> Int? { TimerJSON.int(data["id"]) }
        switch name {
        case .timerAdded:
            guard let json = data["timer"], let timer = CountdownTimer(json: json) else { return nil }
            self = .added(timer)
        case .timerUpdated:
            guard let json = data["timer"], let timer = CountdownTimer(json: json) else { return nil }
            self = .updated(timer, fields: TimerJSON.strings(data["fields"]))
        case .timerRemoved:
            guard let id = id() else { return nil }
            self = .removed(id: id)
        case .timerStarted, .timerStopped:
            guard let id = id(), let remaining = TimerJSON.int(data["remaining_s"]) else { return nil }
            self = name == .timerStarted ? .started(id: id, remainingS: remaining) : .stopped(id: id, remainingS: remaining)
        case .timerFinished:
            guard let id = id() else { return nil }
            self = .finished(id: id)
        }
    }
}

extension CountdownTimer {
    /// At 0: finished, and nobody is viewing any more (choice: a finished
    /// timer has no viewers, so `viewers > 0` exactly when it runs).
    mutating func finish() {
        status = .finished
        remainingS = 0
        countdown = nil
        carriedMS = 0
        clearViewers()
    }

    /// Takes the fields of a `timer_updated` event. The countdown restarts
    /// only when the update set the remaining time: restarting it for a new
    /// name would drop the fraction of a second already elapsed and make the
    /// timer finish late. `fields == nil` (an event without the list) counts
    /// as "everything was set".
    mutating func applyUpdate(from new: CountdownTimer, fields: Set<String>?, at: Date) {
        event = new.event
        location = new.location
        remainingS = new.remainingS
        status = new.status
        let restarts = fields?.contains(CodingKeys.remainingS.stringValue) ?? true
        if restarts { carriedMS = 0 }
        switch status {
        case .running:
            if restarts || countdown == nil {
                countdown = .init(since: at, remainingS: new.remainingS)
            }
            takeViewerCount(new.viewers)
        case .stopped:
            countdown = nil
            takeViewerCount(new.viewers)
        case .finished:
            finish()
        }
    }
}
