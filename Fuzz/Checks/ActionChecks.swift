import Foundation
import OutaTimeDomain
import OutaTimeProtocol

/// Every kind's actions, clock and storage, driven by bytes.
///
/// Input: one byte choosing the kind, two for the start time's milliseconds,
/// then up to ``maxSteps`` steps of: a clock step forward (an injected
/// clock; it never goes back), a session, and one of: an action of the
/// kind with arguments built from the bytes (keys any kind reads, values
/// valid, at the edges or wrong: times near `now` and malformed ones,
/// models and paths, long and combining-mark strings, huge and fractional
/// numbers, nulls, arrays, objects); a scheduler wake (`advance(to:)` and
/// the due ticks); a session leaving (`release`).
///
/// Invariants: no trap; a refused action throws a `ProtocolError` with a
/// message and leaves the state as it was; a read-only action changes
/// nothing and makes no event; every reply, tick push, snapshot and event
/// encodes as JSON that reads back; after each step the stored form reads
/// back (`storedText` → `decodeStored` → `resumeLiveValues`) to the same
/// stored form and, for kinds without live values, to an equal state; and
/// the events made, applied at their whole-second `at` to the initial state
/// as a restarted server does, rebuild the state (exactly for the DeLorean,
/// except its speed mid-trip, which ticks move without events; exactly for
/// the starport and laps; for timers as `TimerReplayFidelityTests` allow:
/// a running countdown's `remaining_s` within 1, `viewers` both above 0).
enum ActionChecks {
    static let maxSteps = 48
    static let kinds = ChannelKind.allCases
    /// 1985-10-26T01:21:00Z.
    static let start = Date(timeIntervalSince1970: 499_137_660)
    static let sessions = ["ann", "bob", "cy"]
    static let intervals = TickIntervals(deloreanMs: 100, lapsMs: 100)
    /// Every argument any kind reads, and one none does.
    static let keys = ["id", "event", "location", "note", "remaining_s", "at", "departs_at", "model", "path", "time", "extra"]

    static func check(_ input: UnsafeRawBufferPointer) throws(FuzzFailure) {
        var bytes = FuzzBytes(input)
        let kind = bytes.pick(kinds)
        var now = start.addingTimeInterval(Double(bytes.uint16() % 1000) / 1000)
        let initial = kind.initialState(now: now)
        var state = initial
        var events: [(event: DomainEvent, at: Date)] = []
        var steps = 0
        while bytes.hasMore && steps < maxSteps {
            steps += 1
            now = now.addingTimeInterval(clockStep(&bytes))
            let session = bytes.pick(sessions)
            switch bytes.choice(8) {
            case 0...4:
                let action = bytes.pick(type(of: state).actions.keys.sorted())
                let args = arguments(&bytes, now: now)
                try perform(&state, action, args, ActionContext(now: now, session: session, actor: "Doc"), into: &events)
            case 5, 6:
                try record(state.advance(to: now), at: now, into: &events)
                try wake(&state, ticks: bytes.choice(100) + 1, at: now, into: &events)
            default:
                try record(state.release(session: session, at: now), at: now, into: &events)
            }
            try storedRoundTrip(state, at: now)
        }
        try replay(initial, events, expected: state, at: now)
    }

    // MARK: Steps

    /// One clock step, in seconds: the edges of seconds and ticks, long
    /// stalls, or any number of milliseconds up to a minute.
    static func clockStep(_ bytes: inout FuzzBytes) -> TimeInterval {
        let ms: Int = switch bytes.choice(4) {
        case 0: bytes.pick([0, 1, 99, 100, 101, 499, 500, 999, 1000, 1001, 8_800, 60_000, 3_600_000, 86_400_000, 31_557_600_000])
        case 1: bytes.uint16()
        default: Int(bytes.byte()) * 10
        }
        return Double(ms) / 1000
    }

    static func perform(_ state: inout any ChannelBehaviour, _ action: String, _ args: ActionArgs,
                        _ context: ActionContext, into events: inout [(event: DomainEvent, at: Date)]) throws(FuzzFailure) {
        let before = state
        let outcome: ActionOutcome
        do throws(ProtocolError) {
            outcome = try state.perform(action, args, context)
        } catch {
            guard !error.message.isEmpty else {
                throw FuzzFailure(.actions, "\(action) \(args.values) refused without a message: \(error)")
            }
            guard ChannelState(state) == ChannelState(before) else {
                throw FuzzFailure(.actions, "\(action) \(args.values) was refused (\(error)) but changed the state:\n\(before.jsonText())\n→ \(state.jsonText())")
            }
            return
        }
        if type(of: state).actions[action] == .readOnly,
           !outcome.events.isEmpty || ChannelState(state) != ChannelState(before) {
            throw FuzzFailure(.actions, "read-only \(action) \(args.values) made \(outcome.events.map(\.name)) or changed the state")
        }
        try encodes(outcome.reply, "the reply to \(action) \(args.values)")
        try record(outcome.events, at: context.now, into: &events)
    }

    /// A scheduler wake at `now` after `advance`: up to `ticks` due ticks
    /// (all of them for a series that plays every tick, the newest only for
    /// the others).
    static func wake(_ state: inout any ChannelBehaviour, ticks: Int, at now: Date,
                     into events: inout [(event: DomainEvent, at: Date)]) throws(FuzzFailure) {
        guard let series = state.clockPlan(intervals).ticks else { return }
        for _ in 0..<(series.catchUp == .everyTick ? ticks : 1) {
            let outcome = state.tick(at: now)
            if let push = outcome.push { try encodes(push, "a tick push") }
            try record(outcome.events, at: now, into: &events)
            if state.clockPlan(intervals).ticks == nil { break }
        }
    }

    /// Keeps `new` as the store does: data through its text, `at` cut to the second.
    static func record(_ new: [DomainEvent], at now: Date,
                       into events: inout [(event: DomainEvent, at: Date)]) throws(FuzzFailure) {
        for event in new {
            let data: JSONValue
            do throws(JSONReadError) {
                data = try JSONValue.parse(Data(event.json.text.utf8))
            } catch {
                throw FuzzFailure(.actions, "event \(event.name) has data that does not read: \(event.json.text): \(error)")
            }
            events.append((DomainEvent(event.name, data), wholeSecond(now)))
        }
    }

    /// What an event's `at` is after the store: `ISOTime.format` then `parse`.
    static func wholeSecond(_ date: Date) -> Date {
        ISOTime.parse(ISOTime.format(date)) ?? date
    }

    static func encodes(_ value: any Encodable & Sendable, _ what: String) throws(FuzzFailure) {
        do {
            _ = try JSONValue.parse(Data(RawJSON(encoding: value).text.utf8))
        } catch {
            throw FuzzFailure(.actions, "\(what) does not encode as JSON that reads back: \(error)")
        }
    }

    // MARK: Invariants

    /// The stored form reads back to itself (and, without live values, to
    /// an equal state); the snapshot encodes.
    static func storedRoundTrip(_ state: any ChannelBehaviour, at now: Date) throws(FuzzFailure) {
        let kind = type(of: state).kind
        try encodes(state.wireState(at: now), "the \(kind.rawValue) snapshot")
        let text = state.storedText(at: now)
        var decoded: any ChannelBehaviour
        do throws(StateDecodingError) {
            decoded = try kind.decodeState(jsonText: text)
        } catch {
            throw FuzzFailure(.actions, "the stored form does not read back: \(error)\n\(text)")
        }
        decoded.resumeLiveValues(storedAt: now)
        let again = decoded.storedText(at: now)
        guard again == text else {
            throw FuzzFailure(.actions, "the stored form read back is stored differently:\n\(text)\n→ \(again)")
        }
        if kind != .timers, ChannelState(decoded) != ChannelState(state) {
            throw FuzzFailure(.actions, "the stored form reads back as a different state:\n\(text)")
        }
    }

    /// The events applied to the initial state rebuild `expected`.
    static func replay(_ initial: any ChannelBehaviour, _ events: [(event: DomainEvent, at: Date)],
                       expected: any ChannelBehaviour, at now: Date) throws(FuzzFailure) {
        let kind = type(of: initial).kind
        var replayed: any ChannelBehaviour
        do throws(StateDecodingError) {
            replayed = try kind.decodeState(jsonText: initial.jsonText())
        } catch {
            throw FuzzFailure(.actions, "the initial state does not read back: \(error)")
        }
        for (event, at) in events { replayed.apply(event, at: at) }
        var expected = expected
        if var car = expected as? DeLoreanState, car.isAccelerating {
            // Ticks are not events: a car rebuilt mid-trip shows 0 mph
            // (DeLoreanReplayFidelityTests); the restart then aborts the trip.
            car.speedMPH = 0
            expected = car
        }
        let context = "\(events.count) events \(events.suffix(6).map(\.event.name))"
        if kind == .timers {
            try expectClose(replayed.snapshot(at: now), expected.snapshot(at: now), context)
        } else if ChannelState(replayed) != ChannelState(expected) {
            throw FuzzFailure(.actions, "replaying \(context) gives\n\(replayed.jsonText())\ninstead of\n\(expected.jsonText())")
        }
    }

    /// Two timer lists' snapshots: equal, except that a running countdown's
    /// `remaining_s` may differ by 1 and its `viewers` only both be above 0.
    static func expectClose(_ replayed: JSONValue, _ live: JSONValue, _ context: String) throws(FuzzFailure) {
        guard case .object(var replayedTop) = replayed, case .object(var liveTop) = live,
              case .array(let replayedTimers)? = replayedTop.removeValue(forKey: "timers"),
              case .array(let liveTimers)? = liveTop.removeValue(forKey: "timers"),
              replayedTimers.count == liveTimers.count, replayedTop == liveTop else {
            throw FuzzFailure(.actions, "replaying \(context) gives\n\(replayed)\ninstead of\n\(live)")
        }
        for (replayedTimer, liveTimer) in zip(replayedTimers, liveTimers) {
            guard case .object(var a) = replayedTimer, case .object(var b) = liveTimer else { continue }
            if b["status"] == .string("running") {
                let remaining = (a.removeValue(forKey: "remaining_s"), b.removeValue(forKey: "remaining_s"))
                let viewers = (a.removeValue(forKey: "viewers"), b.removeValue(forKey: "viewers"))
                guard case (.int(let x)?, .int(let y)?) = remaining, abs(x - y) <= 1,
                      case (.int(let v)?, .int(let w)?) = viewers, v > 0, w > 0 else {
                    throw FuzzFailure(.actions, "replaying \(context) gives timer \(replayedTimer) instead of \(liveTimer)")
                }
            }
            guard a == b else {
                throw FuzzFailure(.actions, "replaying \(context) gives timer \(replayedTimer) instead of \(liveTimer)")
            }
        }
    }

    // MARK: Arguments

    static func arguments(_ bytes: inout FuzzBytes, now: Date) -> ActionArgs {
        var values: [String: JSONValue] = [:]
        for _ in 0..<bytes.choice(5) {
            values[bytes.pick(keys)] = value(&bytes, now: now, depth: 0)
        }
        return ActionArgs(values)
    }

    static let times = ["1985-02-29T00:00:00Z", "1985-10-26T25:00:00Z", "1985-10-26T01:61:00Z", "1985-10-26T01:21:00Zjunk",
                        "1985-10-26T01:21:00.12345678Z", "1985-10-26T01:21:00.123456789012Z", "0000-01-01T00:00:00Z",
                        "9999-12-31T23:59:59.999Z", "-0001-01-01T00:00:00Z", "1985-10-26T01:21:00+01:00", "", "now",
                        "1955-11-12T22:04:00Z", "2015-10-21T16:29:00Z", "1885-09-02T08:00:00Z"]
    static let words = ["SWingV1", "SWingV2", "SWingV3", "TearDrop", "tEaRdRoP", "AB", "AC", "e-d-c", "ABCDE", "EDCBA",
                        "A", "AA", "A-", "F", "", " ", "Hill Valley", "Doc", "Twin Pines Mall", "é"]
    static let offsets: [Double] = [-3_155_760_000, -86_400, -1, -0.001, 0, 0.001, 0.5, 1, 2, 30, 59.999, 61, 3_600,
                                    86_400, 31_557_600, 315_576_000_000, 315_576_000_001]

    /// A JSON value for an argument: valid, at an edge, or of the wrong type.
    static func value(_ bytes: inout FuzzBytes, now: Date, depth: Int) -> JSONValue {
        switch bytes.choice(16) {
        case 0: return .null
        case 1: return .bool(bytes.byte() & 1 == 1)
        case 2, 3: return .int(Int64(bytes.byte()))
        case 4: return .int(bytes.pick([0, -1, 1, 59, 60, 3_599, 86_400, 315_576_000_000, 315_576_000_001,
                                        Int64(Int32.max), Int64.max, Int64.min, 9_007_199_254_740_992]))
        case 5: return .double(bytes.pick([0.5, -0.5, 1e300, -1e300, 1e-300, 3.000001, 2.5, 9.3e18]))
        case 6, 7:
            let offset = bytes.pick(offsets) + Double(bytes.uint16()) / 1000
            return .string(ISOTime.format(now.addingTimeInterval(bytes.byte() & 1 == 0 ? offset : -offset)))
        case 8: return .string(bytes.pick(times))
        case 9, 10: return .string(bytes.pick(words))
        case 11:
            return .string(String(decoding: bytes.take(bytes.choice(48)), as: UTF8.self))
        case 12:
            // One grapheme of many combining marks, or many plain characters.
            let count = bytes.pick([1, 99, 100, 101, 399, 400, 401, 1_000])
            return .string(bytes.byte() & 1 == 0 ? String(repeating: "x", count: count)
                                                 : "e" + String(repeating: "\u{301}", count: count))
        case 13 where depth < 2:
            return .array((0..<bytes.choice(3)).map { _ in value(&bytes, now: now, depth: depth + 1) })
        case 14 where depth < 2:
            return .object([bytes.pick(keys): value(&bytes, now: now, depth: depth + 1)])
        default:
            return .int(Int64(bytes.uint16()) - 1_000)
        }
    }
}
