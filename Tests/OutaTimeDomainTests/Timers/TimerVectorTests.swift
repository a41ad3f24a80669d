import Foundation
@testable import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// Runs `protocol/vectors/timers.json`, the language-neutral cases other
/// clients' tests read too. Same shape as the other kinds' files, `{name,
/// state_before?, action | hook, args?, now, expect}`, plus two keys that
/// viewing needs:
/// - `state_before` is a snapshot taken at `now` (default: the empty list);
///   its running timers count down from `now`.
/// - `viewing` (`{"<id>": [session, …]}`) names the sessions behind each
///   running timer's `viewers`, since a snapshot carries only the count.
/// - `session` is the acting session (default `test-session`).
/// - `hook` is a scheduler entry point instead of a command: `tick`,
///   `advance` (to `now`), `release` (of `session`), `recover_after_restart`.
/// - `expect` is `{ok: true, result?, events?, state_after?, tick?}`
///   (`state_after` is the snapshot at `now`; `tick` null when none) or
///   `{ok: false, code}`.
@Suite struct TimerVectorTests {
    /// One case of the file.
    struct Vector: Sendable, CustomTestStringConvertible {
        let name: String
        let json: [String: JSONValue]
        var testDescription: String { name }
    }

    /// The repository root: the nearest folder above this file with a Package.swift.
    static func repositoryRoot(from file: String = #filePath) -> URL? {
        var folder = URL(fileURLWithPath: file).deletingLastPathComponent()
        while folder.path != "/" {
            if FileManager.default.fileExists(atPath: folder.appendingPathComponent("Package.swift").path) {
                return folder
            }
            folder.deleteLastPathComponent()
        }
        return nil
    }

    static let file = repositoryRoot()?.appendingPathComponent("protocol/vectors/timers.json")

    /// The cases, or none when the file is missing or malformed (then
    /// `fileLoads` fails and says why).
    static let vectors: [Vector] = (try? load()) ?? []

    static func load() throws -> [Vector] {
        let url = try #require(file, "no Package.swift above \(#filePath)")
        let document = try JSONDecoder().decode(JSONValue.self, from: Data(contentsOf: url))
        guard case .array(let items) = document else { throw VectorError.notAnArray }
        return try items.map { item in
            guard case .object(let fields) = item, case .string(let name)? = fields["name"] else {
                throw VectorError.malformedCase("\(item)")
            }
            return Vector(name: name, json: fields)
        }
    }

    enum VectorError: Error {
        case notAnArray
        case malformedCase(String)
    }

    @Test func fileLoads() throws {
        let vectors = try Self.load()
        #expect(vectors.count >= 40)
        #expect(Set(vectors.map(\.name)).count == vectors.count, "names are unique")
        func strings(_ key: String, in object: (Vector) -> [String: JSONValue]?) -> Set<String> {
            Set(vectors.compactMap { if case .string(let text)? = object($0)?[key] { text } else { nil } })
        }
        #expect(strings("action") { $0.json }.isSuperset(of: TimerListState.actions.keys), "every action")
        #expect(strings("hook") { $0.json } == ["tick", "advance", "release", "recover_after_restart"])
        let codes = strings("code") { if case .object(let expect)? = $0.json["expect"] { expect } else { nil } }
        #expect(codes == ["invalid_args", "invalid_time", "not_found", "conflict", "unknown_action"], "every error")
    }

    @Test("vector", arguments: vectors)
    func run(_ vector: Vector) throws {
        let json = vector.json
        guard case .string(let nowText)? = json["now"], let now = ISOTime.parse(nowText),
              case .object(let expect)? = json["expect"] else {
            Issue.record("malformed case")
            return
        }
        var list = try Self.stateBefore(json, now: now)
        let before = list
        let args: [String: JSONValue] = if case .object(let args)? = json["args"] { args } else { [:] }
        let session: String = if case .string(let session)? = json["session"] { session } else { "test-session" }
        let context = ActionContext(now: now, session: session, actor: "vector")
        if case .string(let hook)? = json["hook"] {
            try Self.runHook(hook, on: &list, session: session, now: now, expect: expect)
            return
        }
        guard case .string(let action)? = json["action"] else {
            Issue.record("a case needs an action or a hook")
            return
        }

        if expect["ok"] == .bool(false) {
            let error = try #require(throws: ProtocolError.self) {
                try list.perform(action, ActionArgs(args), context)
            }
            #expect(expect["code"] == .string(error.code.rawValue), "\(error)")
            #expect(list == before, "state unchanged on error")
            return
        }
        let outcome = try list.perform(action, ActionArgs(args), context)
        if let result = expect["result"] { #expect(outcome.result == result) }
        if let events = expect["events"] {
            let actual = outcome.events.map { JSONValue.object(["event": .string($0.name), "data": $0.data]) }
            #expect(JSONValue.array(actual) == events)
        }
        if let stateAfter = expect["state_after"] { #expect(list.snapshot(at: now) == stateAfter) }
    }

    /// Runs a scheduler hook and checks `events`, `tick` and `state_after`.
    static func runHook(_ hook: String, on list: inout TimerListState, session: String, now: Date,
                        expect: [String: JSONValue]) throws {
        var tick: JSONValue?
        let events: [DomainEvent]
        switch hook {
        case "tick": tick = list.tick(at: now) ?? .null; events = []
        case "advance": events = list.advance(to: now)
        case "release": events = list.release(session: session, at: now)
        case "recover_after_restart": events = list.recoverAfterRestart(at: now)
        default:
            Issue.record("unknown hook '\(hook)'")
            return
        }
        #expect(expect["ok"] == .bool(true), "hooks cannot fail")
        if let expected = expect["tick"] { #expect(tick == expected) }
        if let expected = expect["events"] {
            let actual = events.map { JSONValue.object(["event": .string($0.name), "data": $0.data]) }
            #expect(JSONValue.array(actual) == expected)
        }
        if let stateAfter = expect["state_after"] { #expect(list.snapshot(at: now) == stateAfter) }
    }

    /// `state_before` decoded, running timers anchored at `now`, and the
    /// sessions of `viewing` installed.
    static func stateBefore(_ json: [String: JSONValue], now: Date) throws -> TimerListState {
        guard let snapshot = json["state_before"] else { return .initial }
        var list = try TimerFixture.decode(snapshot)
        let viewing: [String: JSONValue] = if case .object(let viewing)? = json["viewing"] { viewing } else { [:] }
        for position in list.timers.indices where list.timers[position].status == .running {
            let timer = list.timers[position]
            list.timers[position].countdown = .init(since: now, remainingS: timer.remainingS)
            let sessions = TimerJSON.strings(viewing[String(timer.id)]) ?? []
            #expect(sessions.count == timer.viewers, "viewing lists every viewer of timer \(timer.id)")
            for session in sessions { list.timers[position].addViewer(session) }
        }
        return list
    }
}
