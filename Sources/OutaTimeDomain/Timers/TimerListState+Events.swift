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

    /// Applies one event that happened at `at`. Events this type did not
    /// write (an unknown name, malformed data, an id no longer present) are
    /// ignored: history is replayed as it is, and a newer server's events
    /// must not break an older client.
    public mutating func apply(_ event: DomainEvent, at: Date) {
        guard let name = EventName(rawValue: event.name) else { return }
        applyData(name, TimerJSON.fields(event.data), at: at)
        dropStaleMoments()
    }

    /// The change itself; `apply` then cleans the heaps once.
    private mutating func applyData(_ name: EventName, _ data: [String: JSONValue], at: Date) {
        switch name {
        case .timerAdded:
            guard let timerJSON = data["timer"], let timer = CountdownTimer(json: timerJSON),
                  index(of: timer.id) == nil else { return }
            var added = timer
            if added.status == .running {
                added.countdown = .init(since: at, remainingS: added.remainingS)
            }
            appendTimer(added)
            nextID = max(nextID, timer.id + 1)
        case .timerUpdated:
            guard let timerJSON = data["timer"], let new = CountdownTimer(json: timerJSON) else { return }
            let fields = TimerJSON.strings(data["fields"]).map(Set.init)
            update(id: new.id) { $0.applyUpdate(from: new, fields: fields, at: at) }
        case .timerRemoved:
            guard let id = TimerJSON.int(data["id"]) else { return }
            // A loop for a list read from elsewhere that repeats the id.
            while let position = index(of: id) { removeTimer(at: position) }
        case .timerStarted:
            guard let id = TimerJSON.int(data["id"]), let remaining = TimerJSON.int(data["remaining_s"]) else { return }
            update(id: id) { timer in
                timer.status = .running
                timer.remainingS = remaining
                timer.countdown = .init(since: at, remainingS: remaining)
                // A client's copy learns of its first viewer here.
                timer.takeViewerCount(max(timer.viewers, 1))
            }
        case .timerStopped:
            guard let id = TimerJSON.int(data["id"]), let remaining = TimerJSON.int(data["remaining_s"]) else { return }
            update(id: id) { timer in
                timer.status = .stopped
                timer.remainingS = remaining
                timer.countdown = nil
                timer.clearViewers()
            }
        case .timerFinished:
            guard let id = TimerJSON.int(data["id"]) else { return }
            update(id: id) { $0.finish() }
        }
    }

    /// Runs `change` on the timer with `id`, if it exists.
    private mutating func update(id: Int, _ change: (inout CountdownTimer) -> Void) {
        guard let position = index(of: id) else { return }
        changeTimer(at: position, change)
    }

    /// `timer_started {id, remaining_s}` for `timer` starting at `now`.
    static func started(_ timer: CountdownTimer, at now: Date) -> DomainEvent {
        DomainEvent(EventName.timerStarted.rawValue, .object([
            "id": .int(Int64(timer.id)),
            "remaining_s": .int(Int64(timer.remaining(at: now))),
        ]))
    }

    /// `timer_stopped {id, remaining_s}` for `timer` pausing at `now`.
    static func stopped(_ timer: CountdownTimer, at now: Date) -> DomainEvent {
        stopped(id: timer.id, remainingS: timer.remaining(at: now))
    }

    /// `timer_stopped {id, remaining_s}`.
    static func stopped(id: Int, remainingS: Int) -> DomainEvent {
        DomainEvent(EventName.timerStopped.rawValue, .object([
            "id": .int(Int64(id)),
            "remaining_s": .int(Int64(remainingS)),
        ]))
    }

    /// The event for a running timer that loses its last viewer at `now`:
    /// `timer_stopped`, or `timer_finished` when it is already at 0 (due, but
    /// not yet advanced), because a timer paused at 0 could only finish later.
    static func paused(_ timer: CountdownTimer, at now: Date) -> DomainEvent {
        paused(id: timer.id, remainingS: timer.remaining(at: now))
    }

    /// `timer_stopped` at `remainingS`, or `timer_finished` at 0.
    static func paused(id: Int, remainingS: Int) -> DomainEvent {
        remainingS == 0 ? finished(id: id) : stopped(id: id, remainingS: remainingS)
    }

    /// `timer_finished {id}`.
    static func finished(id: Int) -> DomainEvent {
        DomainEvent(EventName.timerFinished.rawValue, .object(["id": .int(Int64(id))]))
    }

    /// Applies `event` at `at` and returns it, so builders read as one step.
    mutating func record(_ event: DomainEvent, at: Date) -> DomainEvent {
        apply(event, at: at)
        return event
    }
}

extension CountdownTimer {
    /// At 0: finished, and nobody is viewing any more (choice: a finished
    /// timer has no viewers, so `viewers > 0` exactly when it runs).
    mutating func finish() {
        status = .finished
        remainingS = 0
        countdown = nil
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
        switch status {
        case .running:
            let restarts = fields?.contains(CodingKeys.remainingS.stringValue) ?? true
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
