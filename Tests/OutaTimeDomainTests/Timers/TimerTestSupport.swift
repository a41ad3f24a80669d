import Foundation
@testable import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// Shared fixtures for the timer list tests: fixed dates, argument builders
/// and a list with one timer in each status.
enum TimerFixture {
    /// The night of the first time-travel demonstration.
    static let t0 = ISOTime.parse("1985-10-26T01:21:00Z")!

    /// `t0 + seconds`.
    static func at(_ seconds: Double) -> Date { t0.addingTimeInterval(seconds) }

    /// `t0 + seconds` as a tick's `at`: ISO 8601 with three fractional digits.
    static func isoMilliseconds(_ seconds: Double) -> String {
        let millisecond = Int((seconds * 1_000).rounded())
        let whole = ISOTime.format(t0.addingTimeInterval(Double(millisecond / 1_000)))
        return String(whole.dropLast()) + "." + String(format: "%03d", millisecond % 1_000) + "Z"
    }

    /// The `timers` array of a tick (nil for no tick).
    static func timers(_ tick: JSONValue?) -> JSONValue? {
        guard case .object(let fields)? = tick else { return nil }
        return fields["timers"]
    }

    /// The `at` of a tick (nil for no tick).
    static func tickAt(_ tick: JSONValue?) -> JSONValue? {
        guard case .object(let fields)? = tick else { return nil }
        return fields["at"]
    }

    /// A context at `t0 + seconds` for `session`.
    static func context(_ seconds: Double = 0, session: String = "alice") -> ActionContext {
        ActionContext(now: at(seconds), session: session, actor: "Doc")
    }

    /// Arguments from a dictionary literal.
    static func args(_ values: [String: JSONValue]) -> ActionArgs { ActionArgs(values) }

    /// An integer JSON value.
    static func int(_ number: Int) -> JSONValue { .int(Int64(number)) }

    /// `count` copies of "x".
    static func text(_ count: Int) -> String { String(repeating: "x", count: count) }

    /// A list built by actions at `t0`: timer 1 stopped at 600 s, timer 2
    /// running from 300 s with viewer "alice", timer 3 finished.
    static func mixedList() throws -> TimerListState {
        var list = TimerListState.initial
        _ = try list.perform("add", args(["event": .string("Clock tower"), "location": .string("Hill Valley"), "remaining_s": int(600)]), context())
        _ = try list.perform("add", args(["event": .string("Dance"), "remaining_s": int(300)]), context())
        _ = try list.perform("add", args(["event": .string("Flux capacitor"), "remaining_s": int(0)]), context())
        _ = try list.perform("start", args(["id": int(2)]), context(session: "alice"))
        return list
    }

    /// The timer with `id`, failing the test when it is missing.
    static func timer(_ id: Int, in list: TimerListState,
                      sourceLocation: SourceLocation = #_sourceLocation) throws -> CountdownTimer {
        try #require(list.timers.first { $0.id == id }, "no timer \(id)", sourceLocation: sourceLocation)
    }

    /// A field of an object value (nil for anything else).
    static func field(_ value: JSONValue?, _ key: String) -> JSONValue? {
        guard case .object(let fields)? = value else { return nil }
        return fields[key]
    }

    /// The events' names.
    static func names(_ events: [DomainEvent]) -> [String] { events.map(\.name) }

    /// Decodes a list from its JSON (stored or snapshot form), as a restarted
    /// server or a client would.
    static func decode(_ json: JSONValue) throws -> TimerListState {
        guard case .timers(let list) = try ChannelState(kind: .timers, json: json) else {
            throw DecodeFailure()
        }
        return list
    }

    /// `decode` returned another kind.
    struct DecodeFailure: Error {}
}
