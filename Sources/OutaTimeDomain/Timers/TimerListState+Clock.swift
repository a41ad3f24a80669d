import Foundation
import OutaTimeProtocol

/// The hooks the server's scheduler calls for a timer list. The server owns
/// the clock (deadlines from a monotonic clock); these functions only say
/// what is due at the `now` they are given:
/// - `nextFinish()` → when to call `advance(to:)` next, and
///   `earliestRunningSince` → where to anchor the ticks (both O(1), so they
///   can be asked after every command);
/// - `tick(at:)` once per second per list while anything runs;
/// - `checkpoint(at:)` before storing;
/// - after a restart, `resumeCountdowns(storedAt:)` and
///   `recoverAfterRestart(at:aliveUntil:)` (`TimerListState+Restart.swift`).
extension TimerListState {
    /// The state clients see at `now` (`get`, `subscribe`): every timer with
    /// its live `remaining_s`. Same shape and keys as the stored form.
    public func wireState(at now: Date) -> any Encodable & Sendable {
        Snapshot(timers: list.map { $0.view(at: now) },
                 nextID: nextID != Self.impliedNextID(list) ? nextID : nil)
    }

    /// The `state` of a timer list as clients see it (``wireState(at:)``).
    struct Snapshot: JSONPayload {
        let timers: [CountdownTimer.View]
        let nextID: Int?

        /// `timers`, and `next_id` only when it is not implied.
        func writeFields(to fields: inout JSONFields) throws {
            try fields.write("timers", timers)
            if let nextID { fields.write("next_id", nextID) }
        }
    }

    /// A copy to store: each running timer's `remainingS` is its live value
    /// at `now`, so a crash loses at most the time since this checkpoint. The
    /// copy keeps the runtime fields, so it can also replace the live state.
    public func checkpoint(at now: Date) -> TimerListState {
        var copy = self
        // In place: the countdown bases, which the indexes follow, do not change.
        for position in copy.list.indices where copy.list[position].status == .running {
            copy.list[position].remainingS = copy.list[position].remaining(at: now)
        }
        return copy
    }

    /// The earliest moment a running timer reaches 0; nil when none runs
    /// (a running timer without a base, read from storage, has no deadline).
    /// O(1): the top of a heap.
    public func nextFinish() -> Date? {
        deadlines.first?.at
    }

    /// The earliest `since` of a running countdown; nil when none runs. The
    /// server anchors a list's ticks on it, so each tick shows a whole second
    /// gone. O(1), the same as `runningTimers.compactMap(\.countdown?.since).min()`.
    public var earliestRunningSince: Date? {
        starts.first?.at
    }

    /// Finishes every running timer whose countdown reached 0 by `now`
    /// (deadline ≤ now): `timer_finished {id}` each, in the order they
    /// finished (then by id). A finished timer has no viewers. Costs
    /// O(log n) per timer finished, nothing for the others.
    public mutating func advance(to now: Date) -> [DomainEvent] {
        var events: [DomainEvent] = []
        // The top is always a running countdown's deadline: finishing it
        // makes the entry stale, and `record` drops it.
        while let due = deadlines.first, due.at <= now {
            events.append(record(.finished(id: due.id), at: due.at))
            if deadlines.first == due { deadlines.removeFirst() }
        }
        return events
    }

    /// The per-second `tick` data, `{"timers": [{"id", "remaining_s"}], "at"}`
    /// with every timer running at `now` (list order) and `now` itself to the
    /// millisecond (the second the tick stands for, so a client can tell how
    /// late it arrived), or nil when none runs. A
    /// timer due but not yet advanced shows 0, never less. `now` is the
    /// tick's own second, which the server may process a little later: a
    /// timer started after it is not in this tick (its first tick is the
    /// next one), so consecutive ticks always differ by exactly one second.
    public func tick(at now: Date) -> JSONValue? {
        tickData(at: now).map { tick in
            .object([
                "timers": .array(tick.timers.map { entry in
                    .object(["id": .int(Int64(entry.id)), "remaining_s": .int(Int64(entry.remainingS))])
                }),
                "at": .string(tick.at),
            ])
        }
    }

    /// The same tick as a typed value, which the server encodes for the
    /// wire (a list of 100 running timers encodes 2.3× faster than as a
    /// `JSONValue`; ticks of many lists are most of a busy server's work).
    public func tickData(at now: Date) -> TimersTick? {
        // One pass over the list, reading in place: a tick runs every second
        // for every list, so no copies of the timers (and their strings).
        var entries: [TimersTick.Entry] = []
        for index in list.indices where list[index].status == .running {
            if let countdown = list[index].countdown, countdown.since > now { continue }
            entries.append(TimersTick.Entry(id: list[index].id, remainingS: list[index].remaining(at: now)))
        }
        guard !entries.isEmpty else { return nil }
        return TimersTick(timers: entries, at: MillisecondTime.format(MillisecondTime.milliseconds(now)))
    }
}

/// A timer list's `tick` data: `{"timers": [{"id", "remaining_s"}], "at"}`.
public struct TimersTick: Encodable, Sendable, Equatable, JSONWritable {
    /// One running countdown.
    public struct Entry: Encodable, Sendable, Equatable, JSONWritable {
        /// The timer's id.
        public let id: Int
        /// Whole seconds left at `at`.
        public let remainingS: Int

        private enum CodingKeys: String, CodingKey {
            case id
            case remainingS = "remaining_s"
        }

        /// The synthesised `encode(to:)`'s fields, written directly.
        public func writeFields(to fields: inout JSONFields) {
            fields.write("id", id)
            fields.write("remaining_s", remainingS)
        }
    }

    /// Every running timer, in list order.
    public let timers: [Entry]
    /// The second the tick stands for, ISO 8601 with milliseconds.
    public let at: String

    /// The synthesised `encode(to:)`'s fields, written directly.
    public func writeFields(to fields: inout JSONFields) throws {
        try fields.write("timers", timers)
        fields.write("at", at)
    }
}
