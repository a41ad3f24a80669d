import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// Fixed moments and small helpers shared by the starport tests.
enum StarportFixture {
    /// A morning at the starport: every test starts its clock here.
    static let morning = ISOTime.parse("2026-11-22T08:00:00Z")!

    /// `morning` plus `seconds`.
    static func at(_ seconds: TimeInterval) -> Date { morning.addingTimeInterval(seconds) }

    /// A context at `now` for the operator `actor`.
    static func context(_ now: Date = morning, actor: String = "Marty") -> ActionContext {
        ActionContext(now: now, session: "s-1", actor: actor)
    }

    /// `ActionArgs` from a literal dictionary.
    static func args(_ values: [String: JSONValue]) -> ActionArgs { ActionArgs(values) }

    /// Performs `action` and fails the test on a thrown error.
    @discardableResult
    static func perform(
        _ board: inout StarportState, _ action: String, _ values: [String: JSONValue] = [:],
        at now: Date = morning, actor: String = "Marty"
    ) throws -> ActionOutcome {
        try board.perform(action, ActionArgs(values), context(now, actor: actor))
    }

    /// Performs `action`, expects it to throw, and returns the error; the
    /// board must be unchanged.
    static func failure(
        _ board: StarportState, _ action: String, _ values: [String: JSONValue],
        at now: Date = morning, sourceLocation: SourceLocation = #_sourceLocation
    ) -> ProtocolError? {
        var copy = board
        do {
            _ = try copy.perform(action, ActionArgs(values), context(now))
            Issue.record("\(action) \(values) succeeded, expected an error", sourceLocation: sourceLocation)
            return nil
        } catch {
            #expect(copy == board, "state changed by a failing \(action)", sourceLocation: sourceLocation)
            return error
        }
    }

    /// A board after dispatching `SWingV2` on `AC` (28,080 s) at `morning`.
    static func boardWithOneDispatch() throws -> StarportState {
        var board = StarportState.initial
        try perform(&board, "dispatch", ["model": .string("SWingV2"), "path": .string("AC")])
        return board
    }

    // JSON access as static helpers, not extensions on JSONValue: the other
    // kinds' tests live in the same test module and may add their own.

    /// The field `key` of an object, nil otherwise.
    static func field(_ json: JSONValue?, _ key: String) -> JSONValue? {
        guard case .object(let fields)? = json else { return nil }
        return fields[key]
    }

    /// The elements of an array, empty otherwise.
    static func elements(_ json: JSONValue?) -> [JSONValue] {
        guard case .array(let list)? = json else { return [] }
        return list
    }

    /// The keys of an object, empty otherwise.
    static func keys(_ json: JSONValue?) -> Set<String> {
        guard case .object(let fields)? = json else { return [] }
        return Set(fields.keys)
    }
}
