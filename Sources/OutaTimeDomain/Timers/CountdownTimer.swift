import Foundation
import OutaTimeProtocol

/// One event countdown on a timer list (domain.md, `timers/<list>`).
///
/// The stored and wire form is `{id, event, location, remaining_s, status,
/// viewers}`. Two more things live only while the server runs and are never
/// encoded:
/// - ``viewerSessions``: who has the countdown on screen. No viewer survives
///   a restart, so identities are not worth storing; `viewers` is their count.
/// - ``countdown``: when the countdown last (re)started and from what value.
///   Deriving the remaining time from that base, instead of decrementing once
///   per tick, is what keeps a countdown free of drift.
/// - ``carriedMS``: the part of a second a paused countdown had already run,
///   which its next start goes on from.
///
/// Equality compares the runtime fields too: two timers that differ in who
/// watches them, or in when their countdown started, will not behave alike.
/// To compare what clients see, compare `snapshot(at:)` values instead.
public struct CountdownTimer: Sendable, Equatable, Codable, Identifiable {
    /// Whether the countdown is moving.
    public enum Status: String, Sendable, Equatable, Codable, CaseIterable {
        /// Paused: nobody is viewing it, or it was never started.
        case stopped
        /// At least one viewer; `remaining_s` falls by 1 per second.
        case running
        /// Reached 0; cannot be started again.
        case finished
    }

    /// Server-assigned identifier, unique within the list.
    public var id: Int
    /// What is being counted down to (1–100 characters).
    public var event: String
    /// Where it happens (0–100 characters).
    public var location: String
    /// Seconds left as of the last change or checkpoint. While the timer
    /// runs, the live value comes from ``remaining(at:)``.
    public var remainingS: Int
    /// Stopped, running or finished.
    public var status: Status
    /// Number of sessions currently viewing the countdown. On the server it
    /// always equals `viewerSessions.count`; in a state decoded from JSON (a
    /// client's snapshot) it is the count the server reported.
    public var viewers: Int
    /// The sessions viewing the countdown (runtime only, never encoded).
    public internal(set) var viewerSessions: Set<String> = []
    /// The running countdown's base (runtime only, never encoded); nil unless
    /// the timer runs. A running timer decoded from JSON has none until an
    /// event restarts it, and meanwhile shows its stored `remainingS`.
    public internal(set) var countdown: Countdown?
    /// Milliseconds (0–999) of the current second that the countdown had
    /// run when it last paused (runtime only, never encoded). The next start
    /// goes on from there, so a countdown viewed in pieces shorter than a
    /// second still falls by one for every second it ran in all. Setting
    /// `remaining_s` clears it; a restart loses it (at most a second, within
    /// the rule that a restart may lose up to 5 s).
    public internal(set) var carriedMS = 0

    /// Creates a timer from its fields (no viewer identities, no running base).
    public init(
        id: Int, event: String, location: String, remainingS: Int,
        status: Status = .stopped, viewers: Int = 0
    ) {
        self.id = id
        self.event = event
        self.location = location
        self.remainingS = remainingS
        self.status = status
        self.viewers = viewers
    }

    enum CodingKeys: String, CodingKey {
        case id, event, location
        case remainingS = "remaining_s"
        case status, viewers
    }

    /// Seconds left at `now`: the running base's value when there is one,
    /// otherwise the stored `remainingS`. Never negative.
    public func remaining(at now: Date) -> Int {
        countdown?.remaining(at: now) ?? max(0, remainingS)
    }

    /// The moment a running countdown reaches 0; nil when not counting down.
    public var deadline: Date? { countdown?.deadline }
}

extension CountdownTimer {
    /// A countdown's base: it (re)started at `since` with `remainingS` left.
    /// At `now` the remaining time is `remainingS − whole seconds elapsed`,
    /// reaching 0 exactly at `since + remainingS`.
    public struct Countdown: Sendable, Equatable {
        /// When the countdown (re)started.
        public var since: Date
        /// Seconds left at `since`.
        public var remainingS: Int

        /// Creates a base.
        public init(since: Date, remainingS: Int) {
            self.since = since
            self.remainingS = remainingS
        }

        /// When the countdown reaches 0.
        public var deadline: Date { since.addingTimeInterval(Double(remainingS)) }

        /// Seconds left at `now`, between 0 and `remainingS`.
        public func remaining(at now: Date) -> Int {
            if now >= deadline { return 0 }
            return remainingS - wholeSecondsElapsed(at: now)
        }

        /// Milliseconds (0–999) run of the second under way at `now`: what
        /// a pause at `now` carries over to the next start.
        public func carriedMS(at now: Date) -> Int {
            let whole = wholeSecondsElapsed(at: now)
            guard whole < remainingS else { return 0 }
            let fraction = now.timeIntervalSince(since.addingTimeInterval(Double(whole)))
            // To the nearest millisecond: `Date` sums put 0.6 s at 0.5999….
            return min(999, max(0, Int((fraction * 1000).rounded())))
        }

        /// The largest `k ≥ 0` with `since + k ≤ now`. Computed with the same
        /// `Date` addition as ``deadline``, because `now − since` in floating
        /// point can land a hair under a whole second (2.9999999…) at the very
        /// moment a second is due, and the tick would then show a stale value.
        func wholeSecondsElapsed(at now: Date) -> Int {
            let elapsed = now.timeIntervalSince(since)
            guard elapsed > 0 else { return 0 }
            var seconds = Int(min(elapsed.rounded(.down), Double(remainingS)))
            while seconds < remainingS, since.addingTimeInterval(Double(seconds + 1)) <= now {
                seconds += 1
            }
            while seconds > 0, since.addingTimeInterval(Double(seconds)) > now {
                seconds -= 1
            }
            return seconds
        }
    }
}

extension CountdownTimer {
    /// Adds a viewing session and keeps `viewers` equal to the set's size.
    /// Returns false when the session was already viewing.
    @discardableResult
    mutating func addViewer(_ session: String) -> Bool {
        let inserted = viewerSessions.insert(session).inserted
        viewers = viewerSessions.count
        return inserted
    }

    /// Removes a viewing session. Returns false when it was not viewing.
    @discardableResult
    mutating func removeViewer(_ session: String) -> Bool {
        let removed = viewerSessions.remove(session) != nil
        viewers = viewerSessions.count
        return removed
    }

    /// Forgets every viewer (the countdown stopped or finished).
    mutating func clearViewers() {
        viewerSessions = []
        viewers = 0
    }

    /// The count reported by an event. Only a state without identities
    /// (a client's) takes it: on the server the sessions are the truth.
    mutating func takeViewerCount(_ count: Int) {
        if viewerSessions.isEmpty { viewers = max(0, count) }
    }
}

/// The wire form of a timer, `{id, event, location, remaining_s, status,
/// viewers}`: written typed (``view(at:)``) for replies, snapshots and event
/// data, and read from a `JSONValue` (event data read back). The keys are
/// the `Codable` ones, so the stored form and the wire form cannot drift
/// apart; a test checks it.
extension CountdownTimer {
    /// The timer as clients see it at `now`, with the live `remaining_s`,
    /// as a value (``view(at:)`` read back).
    public func json(at now: Date) -> JSONValue {
        guard let value = try? RawJSON(encoding: view(at: now)).value() else {
            preconditionFailure("a timer did not encode as JSON")
        }
        return value
    }

    /// The timer as clients see it at `now`, typed: the fields and order of
    /// ``json(at:)`` (a reply, a snapshot), written without a tree.
    public func view(at now: Date) -> View { View(timer: self, now: now) }

    /// A timer's wire form at a moment (``view(at:)``).
    public struct View: JSONPayload {
        let timer: CountdownTimer
        let now: Date

        /// `{id, event, location, remaining_s, status, viewers}`, with the
        /// live `remaining_s`.
        public func writeFields(to fields: inout JSONFields) {
            fields.write("id", timer.id)
            fields.write("event", timer.event)
            fields.write("location", timer.location)
            fields.write("remaining_s", timer.remaining(at: now))
            fields.write("status", timer.status.rawValue)
            fields.write("viewers", timer.viewers)
        }
    }

    /// Reads a timer from its wire form (as in `timer_added` data); nil when
    /// a key is missing or has the wrong type. Runtime fields start empty.
    init?(json: JSONValue) {
        guard case .object(let fields) = json,
              let id = TimerJSON.int(fields[CodingKeys.id.stringValue]),
              case .string(let event)? = fields[CodingKeys.event.stringValue],
              let remaining = TimerJSON.int(fields[CodingKeys.remainingS.stringValue]),
              case .string(let statusName)? = fields[CodingKeys.status.stringValue],
              let status = Status(rawValue: statusName)
        else { return nil }
        let location: String
        if case .string(let text)? = fields[CodingKeys.location.stringValue] {
            location = text
        } else {
            location = ""
        }
        let viewers = TimerJSON.int(fields[CodingKeys.viewers.stringValue]) ?? 0
        self.init(id: id, event: event, location: location, remainingS: remaining,
                  status: status, viewers: viewers)
    }
}

/// Small readers for the timers' event data. Kept in a timers-only namespace
/// so they cannot clash with helpers other kinds add to `JSONValue`.
enum TimerJSON {
    /// An integer (an integral double counts), else nil.
    static func int(_ value: JSONValue?) -> Int? {
        switch value {
        case .int(let number)?: Int(exactly: number)
        case .double(let number)?: Int(exactly: number)
        default: nil
        }
    }

    /// The object's fields, or an empty dictionary for anything else.
    static func fields(_ value: JSONValue) -> [String: JSONValue] {
        if case .object(let fields) = value { return fields }
        return [:]
    }

    /// A list of strings; non-strings are skipped, nil when not an array.
    static func strings(_ value: JSONValue?) -> [String]? {
        guard case .array(let items)? = value else { return nil }
        return items.compactMap { if case .string(let text) = $0 { text } else { nil } }
    }
}
