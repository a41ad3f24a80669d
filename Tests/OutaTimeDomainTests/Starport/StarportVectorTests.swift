import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// Runs `protocol/vectors/starport.json`, the test vectors any client can
/// read: each case is an action (or the scheduler hook `advance`) on a board
/// with an expected outcome.
@Suite struct StarportVectorTests {
    /// One case of the vectors file.
    struct VectorCase: Sendable, CustomTestStringConvertible {
        var name: String
        /// The board before, as a snapshot; an empty board when absent.
        var stateBefore: JSONValue?
        /// The command action; nil for a hook case.
        var action: String?
        /// `advance`: the scheduler's `advance(to: now)` instead of a command.
        var hook: String?
        var args: [String: JSONValue]
        var now: String
        /// The acting operator's name (`created_by`); `tester` when absent.
        var actor: String?
        /// `{ok: true, result?, events?, state_after?}` or `{ok: false, code, message_contains?}`.
        var expect: JSONValue

        var testDescription: String { name }
    }

    /// The vectors file, found from this source file: up to the directory
    /// holding Package.swift, then `protocol/vectors/starport.json`.
    static var fileURL: URL {
        var directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while directory.path != "/",
              !FileManager.default.fileExists(atPath: directory.appendingPathComponent("Package.swift").path) {
            directory.deleteLastPathComponent()
        }
        return directory.appendingPathComponent("protocol/vectors/starport.json")
    }

    /// Every case; empty (and `fileLoads` fails) when the file is unreadable.
    static let cases: [VectorCase] = (try? load()) ?? []

    static func load() throws -> [VectorCase] {
        let json = try JSONDecoder().decode(JSONValue.self, from: Data(contentsOf: fileURL))
        guard case .array(let list) = json else { throw VectorError("top level is not an array") }
        return try list.map { item in
            guard case .object(let fields) = item,
                  case .string(let name)? = fields["name"],
                  case .string(let now)? = fields["now"],
                  let expect = fields["expect"]
            else { throw VectorError("malformed case \(item)") }
            func text(_ key: String) -> String? {
                if case .string(let value)? = fields[key] { return value }
                return nil
            }
            guard (text("action") == nil) != (text("hook") == nil) else {
                throw VectorError("case '\(name)' needs exactly one of action and hook")
            }
            var args: [String: JSONValue] = [:]
            if case .object(let values)? = fields["args"] { args = values }
            return VectorCase(name: name, stateBefore: fields["state_before"], action: text("action"),
                              hook: text("hook"), args: args, now: now, actor: text("actor"), expect: expect)
        }
    }

    struct VectorError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    @Test func fileLoads() throws {
        let cases = try Self.load()
        #expect(cases.count == Self.cases.count)
        #expect(cases.count >= 30)
    }

    /// The file carries the seed's examples and the invalid inputs the issue names.
    @Test func fileCoversTheSeed() {
        func quoted(_ path: String) -> [VectorCase] {
            Self.cases.filter { $0.action == "quote" && $0.args["path"] == .string(path) }
        }
        for path in ["AC", "ABAB"] {
            #expect(quoted(path).contains { StarportFixture.field($0.expect, "ok") == .bool(true) }, "\(path)")
        }
        for path in ["A", "AF", "AA", "A1C", ""] {
            #expect(quoted(path).contains { StarportFixture.field($0.expect, "code") == .string("invalid_path") }, "'\(path)'")
        }
        let models = Set(Self.cases.compactMap { $0.args["model"] })
        for ship in Starport.Ship.allCases {
            #expect(models.contains(.string(ship.rawValue)), "\(ship.rawValue)")
        }
        #expect(Self.cases.contains { StarportFixture.field($0.expect, "code") == .string("unknown_model") })
        #expect(Self.cases.contains { $0.hook == "advance" })
    }

    @Test("vector", arguments: cases)
    func run(vector: VectorCase) throws {
        var board = StarportState.initial
        if let before = vector.stateBefore {
            board = try #require(StarportState(snapshot: before), "state_before is not a board")
        }
        let start = board
        let now = try #require(ISOTime.parse(vector.now), "bad now \(vector.now)")
        let context = ActionContext(now: now, session: "vectors", actor: vector.actor ?? "tester")
        let outcome = Result { () throws(ProtocolError) -> ActionOutcome in
            switch (vector.action, vector.hook) {
            case (let action?, _): return try board.perform(action, ActionArgs(vector.args), context)
            case (nil, "advance"): return ActionOutcome(result: .null, events: board.advance(to: now))
            default: throw ProtocolError(.unknownAction, "unknown hook \(vector.hook ?? "none")")
            }
        }
        let expect = vector.expect
        switch (outcome, StarportFixture.field(expect, "ok")) {
        case (.success(let outcome), .bool(true)?):
            if let result = StarportFixture.field(expect, "result") {
                #expect(outcome.result == result)
            }
            if let events = StarportFixture.field(expect, "events") {
                let actual = outcome.events.map { JSONValue.object(["event": .string($0.name), "data": $0.data]) }
                #expect(JSONValue.array(actual) == events)
            }
            if let after = StarportFixture.field(expect, "state_after") {
                #expect(board.snapshot(at: now) == after)
            }
        case (.failure(let error), .bool(false)?):
            #expect(StarportFixture.field(expect, "code") == .string(error.code.rawValue), "\(error)")
            for fragment in StarportFixture.elements(StarportFixture.field(expect, "message_contains")) {
                guard case .string(let text) = fragment else { continue }
                #expect(error.message.contains(text), "'\(text)' not in: \(error.message)")
            }
            #expect(board == start)
        case (.success(let outcome), _):
            Issue.record("expected an error, got \(outcome.result)")
        case (.failure(let error), _):
            Issue.record("expected success, got \(error)")
        }
    }
}
