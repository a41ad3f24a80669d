import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// The two rules every kind's arguments share (issue 13): one strict time
/// reader for every time argument, one length rule (characters and UTF-8
/// bytes) for every bounded string, and integers that are never rounded.
@Suite("argument validation")
struct ArgumentValidationTests {
    static let now = ISOTime.parse("1985-10-26T01:21:00Z")!

    /// Runs `action` on a new channel of `kind`; the error it threw, or nil.
    static func failure(_ kind: ChannelKind, _ action: String, _ args: [String: JSONValue]) -> ProtocolError? {
        var state = ChannelState.initial(kind: kind, now: now)
        do {
            _ = try state.perform(action, ActionArgs(args), ActionContext(now: now))
            return nil
        } catch {
            return error
        }
    }

    /// Every time argument of every kind, with the other arguments it needs.
    static let timeArguments: [(kind: ChannelKind, action: String, key: String, others: [String: JSONValue])] = [
        (.delorean, "set_destination", "time", [:]),
        (.starport, "dispatch", "departs_at", ["model": .string("SWingV2"), "path": .string("AB")]),
        (.timers, "add", "at", ["event": .string("Enchantment Under the Sea")]),
    ]

    /// Issue 13's corpus: each of these was rolled over or cut short
    /// instead of refused.
    static let corpus = [
        "1985-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "1985-10-26T25:00:00Z", "1985-10-26T24:00:00Z",
        "1985-10-26T01:61:00Z", "1985-10-26T01:21:60Z", "1985-10-26T01:21:00Zjunk", "1985-04-31T12:00:00Z",
    ]

    @Test("every time argument refuses impossible times with invalid_time, naming argument and value",
          arguments: timeArguments.indices, corpus)
    func timesAreRefused(index: Int, text: String) throws {
        let (kind, action, key, others) = Self.timeArguments[index]
        var args = others
        args[key] = .string(text)
        let error = try #require(Self.failure(kind, action, args), "\(kind) \(action) took \(key) \(text)")
        #expect(error.code == .invalidTime)
        #expect(error.message.contains("argument '\(key)'"), "\(error.message)")
        #expect(error.message.contains("'\(text)'"), "\(error.message)")
        #expect(error.message.contains("yyyy-MM-ddTHH:mm:ss"), "\(error.message)")
    }

    @Test("every time argument reads any number of fraction digits and truncates them")
    func fractionsAreTruncated() throws {
        var delorean = ChannelState.initial(kind: .delorean, now: Self.now)
        let outcome = try delorean.perform("set_destination", ActionArgs(["time": .string("1955-11-12T22:04:59.99999999Z")]),
                                           ActionContext(now: Self.now))
        #expect(outcome.events == [DomainEvent("destination_set", .object(["destination_time": .string("1955-11-12T22:04:59Z")]))])
        var starport = ChannelState.initial(kind: .starport, now: Self.now)
        let dispatched = try starport.perform("dispatch", ActionArgs([
            "model": .string("SWingV2"), "path": .string("AB"),
            "departs_at": .string("2015-10-21T16:29:00.123456789012Z"),
        ]), ActionContext(now: Self.now))
        guard case .object(let dispatch) = dispatched.result else {
            Issue.record("no dispatch in \(dispatched.result)")
            return
        }
        #expect(dispatch["departs_at"] == .string("2015-10-21T16:29:00Z"))
        // Timers: `at` a fraction of a second after now still counts one second up.
        var timers = ChannelState.initial(kind: .timers, now: Self.now)
        let added = try timers.perform("add", ActionArgs([
            "event": .string("lightning"), "at": .string("1985-10-26T01:21:00.0019Z"),
        ]), ActionContext(now: Self.now))
        guard case .object(let timer) = added.result else {
            Issue.record("no timer in \(added.result)")
            return
        }
        #expect(timer["remaining_s"] == .int(1))
    }

    @Test("a dispatch that would land after 9999-12-31T23:59:59Z is refused, since that time could not be read back")
    func dispatchBeyondTheLastYear() throws {
        let error = try #require(Self.failure(.starport, "dispatch", [
            "model": .string("SWingV2"), "path": .string("AB"), "departs_at": .string("9999-12-31T23:00:00Z"),
        ]))
        #expect(error.code == .invalidTime)
        #expect(error.message.contains("9999-12-31T23:59:59Z"), "\(error.message)")
        #expect(Self.failure(.starport, "dispatch", [
            "model": .string("SWingV2"), "path": .string("AB"), "departs_at": .string("9999-12-30T00:00:00Z"),
        ]) == nil)
    }

    /// Every bounded string argument: (kind, action, key, character limit, other arguments).
    static let stringArguments: [(kind: ChannelKind, action: String, key: String, limit: Int, others: [String: JSONValue])] = [
        (.timers, "add", "event", 100, ["remaining_s": .int(60)]),
        (.timers, "add", "location", 100, ["event": .string("x"), "remaining_s": .int(60)]),
        (.starport, "dispatch", "note", 100, ["model": .string("SWingV2"), "path": .string("AB")]),
    ]

    @Test("every bounded string is bounded in characters and in UTF-8 bytes", arguments: stringArguments.indices)
    func lengths(index: Int) throws {
        let (kind, action, key, limit, others) = Self.stringArguments[index]
        func run(_ text: String) -> ProtocolError? {
            var args = others
            args[key] = .string(text)
            return Self.failure(kind, action, args)
        }
        // The corpus: one character of thousands of combining marks.
        let zalgo = "e" + String(repeating: "\u{301}", count: 3_000)
        let error = try #require(run(zalgo), "\(key): one character of 6,001 bytes was accepted")
        #expect(error.code == .invalidArgs)
        #expect(error.message.contains("argument '\(key)'"), "\(error.message)")
        #expect(error.message.contains("1 character and 6001 bytes"), "\(error.message)")
        #expect(error.message.contains("\(limit) characters and at most \(4 * limit) bytes"), "\(error.message)")
        #expect(error.message.utf8.count < 500, "the message quotes only the start of the value")
        // At the limits: 4-byte characters up to the character limit pass…
        #expect(run(String(repeating: "🚗", count: limit)) == nil)
        // …one more character, or one more byte in fewer characters, does not.
        #expect(run(String(repeating: "x", count: limit + 1))?.code == .invalidArgs)
        #expect(run(String(repeating: "🚗", count: limit - 1) + "e\u{301}\u{301}")?.code == .invalidArgs)
        #expect(run(String(repeating: "🚗", count: limit - 1) + "e\u{301}") == nil)
    }

    @Test("integer arguments refuse numbers with a fraction, even when their nearest double is whole")
    func integers() throws {
        let body = #"{"remaining_s":9007199254740992.5,"tiny":1e-400,"whole":60.0}"#
        guard case .object(let parsed) = try JSONValue.parse(Data(body.utf8)) else {
            Issue.record("not an object")
            return
        }
        let args = ActionArgs(parsed)
        #expect(try args.int("whole", in: 0...100) == 60)
        #expect {
            try args.int("tiny", in: 0...100)
        } throws: { error in
            (error as? ProtocolError)?.message == "argument 'tiny' must be an integer 0…100, got 0.0 (a number with a fraction, or beyond 64 bits)"
        }
        #expect(Self.failure(.timers, "add", ["event": .string("x"), "remaining_s": parsed["remaining_s"]!])?.code == .invalidArgs)
    }
}
