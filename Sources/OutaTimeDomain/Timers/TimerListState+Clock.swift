import Foundation
import OutaTimeProtocol

/// The hooks the server's scheduler calls for a timer list. The server owns
/// the clock (deadlines from a monotonic clock); these functions only say
/// what is due at the `now` they are given:
/// - `nextFinish()` → when to call `advance(to:)` next;
/// - `tick(at:)` once per second per list while anything runs;
/// - `checkpoint(at:)` before storing (at least every 5 s while running);
/// - `recoverAfterRestart(at:)` once after loading the stored state.
extension TimerListState {
    /// The state clients see at `now` (`get`, `subscribe`): every timer with
    /// its live `remaining_s`. Same shape and keys as the stored form.
    public func snapshot(at now: Date) -> JSONValue {
        var fields: [String: JSONValue] = ["timers": .array(timers.map { $0.json(at: now) })]
        if nextID != Self.impliedNextID(timers) {
            fields[CodingKeys.nextID.stringValue] = .int(Int64(nextID))
        }
        return .object(fields)
    }

    /// A copy to store: each running timer's `remainingS` is its live value
    /// at `now`, so a crash loses at most the time since this checkpoint. The
    /// copy keeps the runtime fields, so it can also replace the live state.
    public func checkpoint(at now: Date) -> TimerListState {
        var copy = self
        for position in copy.timers.indices where copy.timers[position].status == .running {
            copy.timers[position].remainingS = copy.timers[position].remaining(at: now)
        }
        return copy
    }

    /// The earliest moment a running timer reaches 0; nil when none runs.
    public func nextFinish() -> Date? {
        timers.compactMap { $0.status == .running ? $0.deadline : nil }.min()
    }

    /// Finishes every running timer whose countdown reached 0 by `now`
    /// (deadline ≤ now): `timer_finished {id}` each, in the order they
    /// finished (then by id). A finished timer has no viewers.
    public mutating func advance(to now: Date) -> [DomainEvent] {
        let due = timers
            .compactMap { timer -> (deadline: Date, id: Int)? in
                guard timer.status == .running, let deadline = timer.deadline, deadline <= now else { return nil }
                return (deadline, timer.id)
            }
            .sorted { ($0.deadline, $0.id) < ($1.deadline, $1.id) }
        return due.map { record(Self.finished(id: $0.id), at: $0.deadline) }
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
        for index in timers.indices where timers[index].status == .running {
            if let countdown = timers[index].countdown, countdown.since > now { continue }
            entries.append(TimersTick.Entry(id: timers[index].id, remainingS: timers[index].remaining(at: now)))
        }
        guard !entries.isEmpty else { return nil }
        return TimersTick(timers: entries, at: MillisecondTime.format(MillisecondTime.milliseconds(now)))
    }

    /// After a restart no viewer is left: every running timer pauses at its
    /// last checkpointed value with `timer_stopped {id, remaining_s}`. One
    /// checkpointed at 0 (it was due when the server went down) gets
    /// `timer_finished {id}` instead, since starting it again would only
    /// finish it. Viewer counts on other timers are reset without an event:
    /// they are presence, not durable state.
    public mutating func recoverAfterRestart(at now: Date) -> [DomainEvent] {
        var events: [DomainEvent] = []
        for position in timers.indices {
            let timer = timers[position]
            if timer.status == .running {
                events.append(record(Self.paused(timer, at: now), at: now))
            } else {
                timers[position].clearViewers()
            }
        }
        return events
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
