import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// One case of a `protocol/vectors/<kind>.json` file: a state, one action
/// (or one server hook) at a fixed time, and what must come out.
///
/// The files are plain JSON so that any client's tests can read them too:
/// `{"name", "state_before"?, "action" | "hook", "args"?, "now",
///   "expect": {"ok": true, "result"?, "events"?, "state_after"?, "tick"?}
///           | {"ok": false, "code"}}`.
/// `hook` names a time-driven entry point the server's scheduler calls
/// (`accelerate`, `recover_after_restart`, `tick`) instead of a command.
struct ProtocolVector: Sendable, CustomTestStringConvertible {
    /// Unique within its file; shown as the test case's name.
    var name: String
    /// The snapshot the case starts from; nil means the kind's initial state.
    var stateBefore: JSONValue?
    /// The command action, or nil for a hook.
    var action: String?
    /// The scheduler hook, or nil for a command.
    var hook: String?
    /// The command's `args`.
    var args: ActionArgs
    /// The injected clock's time.
    var now: Date
    /// The expectation object.
    var expect: [String: JSONValue]

    var testDescription: String { name }

    /// Whether the action must succeed.
    var expectsSuccess: Bool { expect["ok"] == .bool(true) }

    /// The expected error code of a failing case.
    var expectedCode: String? {
        if case .string(let code)? = expect["code"] { code } else { nil }
    }

    /// The expected events as `DomainEvent`s, when the case lists them.
    var expectedEvents: [DomainEvent]? {
        guard case .array(let list)? = expect["events"] else { return nil }
        return list.map { item in
            guard case .object(let fields) = item, case .string(let name)? = fields["event"] else {
                return DomainEvent("<malformed vector event>")
            }
            return DomainEvent(name, fields["data"] ?? .object([:]))
        }
    }
}

/// Reads `protocol/vectors/<kind>.json` from the repository this file is in.
enum ProtocolVectors {
    /// The repository root: this file is at `Tests/OutaTimeDomainTests/<Kind>/`.
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// Every case of `kind`'s file, in file order. Throws when the file is
    /// missing or a case lacks `name`, `now` or `expect`, so a broken file
    /// fails the suite instead of silently running nothing.
    static func load(_ kind: String) throws -> [ProtocolVector] {
        let url = root.appendingPathComponent("protocol/vectors/\(kind).json")
        let document = try JSONDecoder().decode(JSONValue.self, from: Data(contentsOf: url))
        guard case .array(let items) = document else { throw VectorFileError("\(kind).json is not an array") }
        return try items.enumerated().map { index, item in
            guard case .object(let fields) = item,
                  case .string(let name)? = fields["name"],
                  case .string(let nowText)? = fields["now"], let now = ISOTime.parse(nowText),
                  case .object(let expect)? = fields["expect"] else {
                throw VectorFileError("\(kind).json case \(index) needs name, now (ISO time) and expect")
            }
            var args: [String: JSONValue] = [:]
            if case .object(let given)? = fields["args"] { args = given }
            func text(_ key: String) -> String? {
                if case .string(let value)? = fields[key] { value } else { nil }
            }
            guard (text("action") == nil) != (text("hook") == nil) else {
                throw VectorFileError("\(kind).json case '\(name)' needs exactly one of action and hook")
            }
            return ProtocolVector(name: name, stateBefore: fields["state_before"], action: text("action"),
                                  hook: text("hook"), args: ActionArgs(args), now: now, expect: expect)
        }
    }
}

/// A state type the vector runner can drive: the kind's own API plus how to
/// build it from a vector's `state_before` and how to call its hooks.
protocol VectorSubject: ChannelBehaviour {
    /// The state when a case has no `state_before`.
    static func initial(at now: Date) -> Self
    /// Reads a snapshot as the wire sends it.
    init(snapshot: JSONValue) throws
    /// The wire snapshot at `now`.
    func snapshot(at now: Date) -> JSONValue
    /// Runs the scheduler hook `name`; nil when the kind has no such hook.
    mutating func runHook(_ name: String, at now: Date) -> (tick: JSONValue?, events: [DomainEvent])?
}

extension ProtocolVectors {
    /// Runs one case against `S` and records every mismatch.
    static func run<S: VectorSubject>(_ vector: ProtocolVector, as _: S.Type) throws {
        var state = try vector.stateBefore.map(S.init(snapshot:)) ?? S.initial(at: vector.now)
        let before = state.snapshot(at: vector.now)
        let checks: Set<String> = ["result", "events", "state_after", "tick", "code"]
        #expect(!checks.isDisjoint(with: vector.expect.keys), "case '\(vector.name)' checks nothing")

        var result: JSONValue?
        var tick: JSONValue?
        let events: [DomainEvent]
        if let action = vector.action {
            do {
                let outcome = try state.perform(action, vector.args, ActionContext(now: vector.now))
                result = outcome.result
                events = outcome.events
            } catch {
                #expect(!vector.expectsSuccess, "unexpected \(error)")
                #expect(error.code.rawValue == vector.expectedCode, "\(error)")
                #expect(state.snapshot(at: vector.now) == before, "a failed action changed the state")
                return
            }
        } else {
            let hook = vector.hook ?? ""
            guard let outcome = state.runHook(hook, at: vector.now) else {
                Issue.record("unknown hook '\(hook)'")
                return
            }
            tick = outcome.tick
            events = outcome.events
        }
        #expect(vector.expectsSuccess, "expected \(vector.expectedCode ?? "a failure") but it succeeded")
        if let expected = vector.expect["result"] { #expect(result == expected) }
        if let expected = vector.expectedEvents { #expect(events == expected) }
        if let expected = vector.expect["state_after"] { #expect(state.snapshot(at: vector.now) == expected) }
        if let expected = vector.expect["tick"] { #expect((tick ?? .null) == expected) }
    }

    /// The actions, hooks and error codes a file exercises, to check coverage.
    static func coverage(of vectors: [ProtocolVector])
        -> (actions: Set<String>, hooks: Set<String>, codes: Set<String>) {
        (Set(vectors.compactMap(\.action)), Set(vectors.compactMap(\.hook)), Set(vectors.compactMap(\.expectedCode)))
    }
}

/// A vector file that does not have the documented shape.
struct VectorFileError: Error, CustomStringConvertible {
    /// What is wrong, naming the file and case.
    var description: String

    init(_ description: String) { self.description = description }
}
