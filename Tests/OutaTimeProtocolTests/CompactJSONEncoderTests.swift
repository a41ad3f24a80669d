import Foundation
import Testing
import OutaTimeProtocol
import OutaTimeTestKit

/// Foundation's encoder as MessageEncoder used to configure it: the reference.
private func foundationText(_ value: some Encodable) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.withoutEscapingSlashes]
    return String(decoding: try encoder.encode(value), as: UTF8.self)
}

private func compactText(_ value: some Encodable) throws -> String {
    String(decoding: try CompactJSONEncoder().encode(value), as: UTF8.self)
}

/// Both encoders' output read back as values: equal whatever the key order.
private func expectSameJSON(_ value: some Encodable, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let compact = try JSONValue.parse(Data(try CompactJSONEncoder().encode(value)))
    let reference = try JSONValue.parse(Data(try foundationText(value).utf8))
    #expect(compact == reference, sourceLocation: sourceLocation)
}

private struct Point: Codable, Equatable {
    var x: Int
    var y: Double
    var label: String?
}

private struct Nesting: Encodable {
    var points: [Point]
    var byName: [String: Point]
    var matrix: [[Int]]
    var flags: [Bool?]
    var empty: [Int]
    var nothing: Point?
}

/// Writes nothing at all: Foundation writes `{}`.
private struct Silent: Encodable {
    func encode(to encoder: any Encoder) throws {}
}

/// Asks for its keyed container twice, as a subclass calling `super` does.
private struct TwoPasses: Encodable {
    enum Keys: String, CodingKey { case a, b, inner, c }
    func encode(to encoder: any Encoder) throws {
        var first = encoder.container(keyedBy: Keys.self)
        try first.encode(1, forKey: .a)
        var inner = first.nestedContainer(keyedBy: Keys.self, forKey: .inner)
        try inner.encode("x", forKey: .a)
        var list = inner.nestedUnkeyedContainer(forKey: .b)
        try list.encode(1)
        try list.encode(2)
        var second = encoder.container(keyedBy: Keys.self)
        try second.encode(true, forKey: .b)
        try second.encodeNil(forKey: .c)
    }
}

@Suite("CompactJSONEncoder")
struct CompactJSONEncoderTests {
    static let strings = [
        "", "plain", "delorean/main", #"quote " and backslash \"#, "tab\tnew\nline\rcr",
        "\u{8}\u{C}", String((0..<32).map { Character(Unicode.Scalar($0)!) }), "\u{7F}",
        "Zürich — 88 mph ⚡️ 🚗", "\u{2028}\u{2029}", "mixed \"/\\\u{1}end",
    ]

    @Test("strings are escaped byte for byte as Foundation does", arguments: strings)
    func stringsMatchFoundation(_ string: String) throws {
        #expect(try compactText(string) == foundationText(string))
        #expect(try compactText([string: string]) == foundationText([string: string]))
    }

    @Test("a JSONValue object is written with its members sorted by key, whatever the dictionary's order")
    func objectMembersSorted() throws {
        let keys = ["speed_kmh", "model", "docking_s", "b", "a", "é", "Z", "aa"]
        var forward: [String: JSONValue] = [:]
        for (index, key) in keys.enumerated() { forward[key] = .int(Int64(index)) }
        var backward: [String: JSONValue] = [:]
        for (index, key) in keys.enumerated().reversed() { backward[key] = .int(Int64(index)) }
        backward.reserveCapacity(100)  // another table size: another iteration order
        let expected = "{" + keys.sorted().map { key in "\"\(key)\":\(keys.firstIndex(of: key)!)" }.joined(separator: ",") + "}"
        #expect(try compactText(JSONValue.object(forward)) == expected)
        #expect(try compactText(JSONValue.object(backward)) == expected)
        #expect(try compactText(JSONValue.array([.object(backward)])) == "[" + expected + "]", "nested too")
        // Counts by name (stats' closes, connections_refused, …) the same way.
        struct Counts: Encodable { var closes: [String: Int]; var http: [String: Int]? }
        var counts: [String: Int] = [:]
        for (index, key) in keys.enumerated().reversed() { counts[key] = index }
        #expect(try compactText(Counts(closes: counts, http: counts)) == "{\"closes\":\(expected),\"http\":\(expected)}")
    }

    @Test("integers of every width at their limits")
    func integers() throws {
        #expect(try compactText([Int.min, -1, 0, 7, Int.max]) == "[-9223372036854775808,-1,0,7,9223372036854775807]")
        #expect(try compactText(UInt64.max) == "18446744073709551615")
        #expect(try compactText([Int8.min, Int8.max]) == "[-128,127]")
        #expect(try compactText([UInt8.max]) == "[255]")
        #expect(try compactText([Int16.min]) == foundationText([Int16.min]))
        #expect(try compactText([Int32.min, Int32.max]) == foundationText([Int32.min, Int32.max]))
        #expect(try compactText([UInt16.max]) == foundationText([UInt16.max]))
        #expect(try compactText([UInt32.max]) == foundationText([UInt32.max]))
        #expect(try compactText([UInt.max]) == foundationText([UInt.max]))
        #expect(try compactText([Int64.min]) == foundationText([Int64.min]))
    }

    @Test("floating-point numbers as Foundation writes them",
          arguments: [0.0, -0.0, 1.0, -2.5, 0.1, 1e20, 1e21, 1.5e-7, 123_456_789.125, Double.leastNonzeroMagnitude,
                      Double.greatestFiniteMagnitude, 88.0, 3.3333333333333335])
    func doubles(_ value: Double) throws {
        #expect(try compactText(value) == foundationText(value))
        if abs(value) <= Double(Float.greatestFiniteMagnitude) {
            #expect(try compactText(Float(value)) == foundationText(Float(value)))
        }
    }

    @Test("NaN and infinities throw invalidValue, as with Foundation", arguments: [Double.nan, .infinity, -.infinity])
    func nonFinite(_ value: Double) throws {
        #expect(throws: EncodingError.self) { try CompactJSONEncoder().encode(["x": value]) }
        #expect(throws: EncodingError.self) { try CompactJSONEncoder().encode([Float(value)]) }
        #expect(throws: EncodingError.self) { try CompactJSONEncoder().encode(JSONValue.array([.double(value)])) }
    }

    @Test("nested objects, arrays, optionals and dictionaries read back equal to Foundation's")
    func nesting() throws {
        let value = Nesting(
            points: [Point(x: 1, y: 2.5, label: nil), Point(x: -3, y: 0, label: "a\"b")],
            byName: ["first": Point(x: 0, y: 1e-3, label: "é"), "": Point(x: 9, y: 9, label: nil)],
            matrix: [[], [1], [1, 2, 3]],
            flags: [true, nil, false],
            empty: [],
            nothing: nil)
        try expectSameJSON(value)
        // Keys in the order encode(to:) writes them; a nil optional is left out.
        #expect(try compactText(Point(x: 1, y: 2, label: nil)) == #"{"x":1,"y":2}"#)
        #expect(try JSONDecoder().decode(Point.self, from: Data(CompactJSONEncoder().encode(Point(x: 4, y: 0.5, label: "z"))))
            == Point(x: 4, y: 0.5, label: "z"))
    }

    @Test("a value that writes nothing is {} at the top, as a member and as an element")
    func silent() throws {
        #expect(try compactText(Silent()) == "{}")
        #expect(try compactText(["a": Silent()]) == #"{"a":{}}"#)
        #expect(try compactText([Silent(), Silent()]) == "[{},{}]")
    }

    @Test("a container asked for twice continues the same object; nested ones end at the next member")
    func containerReuse() throws {
        #expect(try compactText(TwoPasses()) == #"{"a":1,"inner":{"a":"x","b":[1,2]},"b":true,"c":null}"#)
        try expectSameJSON(TwoPasses())
        #expect(try compactText([TwoPasses(), TwoPasses()]).hasSuffix(#""c":null}]"#))
    }

    @Test("random JSONValue trees read back equal to Foundation's", arguments: 0..<40)
    func randomTrees(_ seed: Int) throws {
        var generator = SeededGenerator(seed: UInt64(seed))
        let value = JSONValue.random(depth: 4, using: &generator)
        try expectSameJSON(value)
        let text = try compactText(value)
        let back = try JSONValue.parse(Data(text.utf8))
        #expect(back == value, "\(text) -> \(back) vs \(value)")
    }

    @Test("every reply and push type reads back equal to Foundation's")
    func protocolMessages() throws {
        let doc = Watcher(session: "s1", name: "Doc \"Emmett\" Brown")
        let data = JSONValue.object([
            "speed_mph": .int(88), "laps": .array([.int(1), .double(2.5), .string("x"), .null, .bool(true)]),
            "nested": .object(["a": .object(["b": .array([])])]),
        ])
        try expectSameJSON(ReplyOK(id: .int(7), result: PublishResult(delivered: 3)))
        try expectSameJSON(ReplyOK(id: .string("req-1"), result: EmptyResult()))
        try expectSameJSON(ReplyOK(id: .int(Int64(1) << 53), result: data))
        try expectSameJSON(ReplyError(id: .string("x"), error: ProtocolError(.notSubscribed, "not subscribed to 'laps/a'")))
        try expectSameJSON(EventPush(channel: "laps/a", seq: 12, event: "lap_recorded", data: data, at: "2026-11-22T10:00:00.000Z"))
        try expectSameJSON(MessagePush(channel: "starport/x", from: doc, data: data))
        try expectSameJSON(ByePush(reason: .serverShutdown))
        try expectSameJSON(ErrorPush(error: ProtocolError(.badJSON, "not JSON: \u{1}")))
        try expectSameJSON(TickPush(channel: "delorean/a", data: data))
        try expectSameJSON(HelloResult(server: "outatime", protocol: 1, session: "s1",
                                       heartbeatMs: 7_500, maxFrame: 1 << 20, role: "operate"))
        try expectSameJSON(HistoryResult(channel: "laps/a", seq: 1, events: [
            HistoryEvent(seq: 1, event: "started", data: data, at: "2026-11-22T10:00:00.000Z"),
        ]))
        try expectSameJSON(PresencePush(channel: "laps/a", joined: [doc], left: [], watcherCount: 3))
        try expectSameJSON(PresencePush(channel: "laps/a", joined: [], left: [doc], joinedCount: 0, leftCount: 1))
        try expectSameJSON(SubscribeResult(channel: "laps/a", kind: .laps, seq: 4, watchers: [doc], watcherCount: 1, state: data))
        try expectSameJSON(SubscribeResult(channel: "laps/a", kind: .laps, seq: 4, watchers: [], recovered: true, events: []))
        try expectSameJSON(ListResult(channels: [ChannelSummary(channel: "laps/a", kind: .laps, seq: 4, watchers: 2)]))
        try expectSameJSON(GetResult(channel: "timers/x", kind: .timers, seq: 0, state: data))
        try expectSameJSON(PingResult(time: "2026-11-22T10:00:00.000Z"))
    }
}

@Suite("JSONWritable")
struct JSONWritableTests {
    @Test("replies, event and tick pushes write what their Codable conformance writes")
    func protocolMessages() throws {
        let data = JSONValue.object(["lap": .int(2), "time_ms": .int(61_250), "note": .string("a \"b\"")])
        try expectSameJSONBothWays(ReplyOK(id: .int(9), result: PublishResult(delivered: 2)))
        try expectSameJSONBothWays(ReplyOK(id: .string("x/y"), result: data))
        try expectSameJSONBothWays(ReplyOK(id: .int(1), result: EmptyResult()))
        try expectSameJSONBothWays(EventPush(channel: "laps/a", seq: 41, event: "lap_recorded", data: data, at: "2026-11-22T10:00:00.000Z"))
        try expectSameJSONBothWays(TickPush(channel: "delorean/a", data: data))
        try expectSameJSONBothWays(TickPush(channel: "delorean/a", data: ViaCodable(value: data)))
        let doc = Watcher(session: "s-\"1\"", name: "Doc \\ \"Emmett\"\n")
        try expectSameJSONBothWays(doc)
        try expectSameJSONBothWays(MessagePush(channel: "starport/x", from: doc, data: data))
        try expectSameJSONBothWays(MessagePush(channel: "starport/x", from: doc, data: .string("64 bytes\u{1}")))
        // Nested: a writable inside a Codable array inside a writable.
        try expectSameJSONBothWays(ReplyOK(id: .int(3), result: [ReplyOK(id: .int(4), result: data)]))
    }

    @Test("a message push, written in runs, is byte for byte its Codable form for any data, alone and nested")
    func messagePushRuns() throws {
        var generator = SeededGenerator(seed: 28)
        let doc = Watcher(session: "s-\"1\"\u{7}", name: "Dr. Émmett \\ \"Doc\" Brown 🚗\n")
        var values: [JSONValue] = [
            .null, .bool(false), .int(-42), .double(0.25), .string(""), .string("a \"quoted\" \\ é 🚗 \u{2028}\u{0}"),
            .array([.int(1), .array([]), .object([:])]),
            .object(["z": .int(1), "a": .object(["nested": .array([.string("x"), .null])])]),
        ]
        for _ in 0..<60 { values.append(JSONValue.random(depth: 3, using: &generator)) }
        for data in values {
            let push = MessagePush(channel: "starport/bench", from: doc, data: data)
            try expectSameJSONBothWays(push)
            // Inside other containers the members' commas and the closing
            // brace still come where the Codable form puts them.
            try expectSameJSONBothWays(ReplyOK(id: .int(5), result: [push, push]))
            let reusable = ReusableMessageEncoder()
            let framed = try reusable.frame(writing: push).withUnsafeBytes { Array($0) }
            #expect(framed == (try MessageEncoder().frame(ViaCodable(value: push)).withUnsafeBytes { Array($0) }))
        }
    }
}

@Suite("ReusableMessageEncoder")
struct ReusableMessageEncoderTests {
    private func bytes(_ frame: Frame) -> [UInt8] { frame.withUnsafeBytes { Array($0) } }

    @Test("one encoder frames a run of messages of every size exactly as a fresh MessageEncoder each")
    func sameFramesAsAFreshEncoder() throws {
        let reusable = ReusableMessageEncoder()
        var generator = SeededGenerator(seed: 11)
        // Small and large values alternate: a 200 KiB one grows the buffer
        // past what is kept, and the next small one must not see its bytes.
        let huge = JSONValue.string(String(repeating: "x", count: 200 * 1024))
        let values: [JSONValue] = (0..<40).map { index in
            index % 10 == 5 ? .array([huge]) : JSONValue.random(depth: 3, using: &generator)
        }
        for value in values {
            let message = ReplyOK(id: .int(7), result: value)
            #expect(bytes(try reusable.frame(message)) == bytes(try MessageEncoder().frame(message)))
        }
    }

    /// A result that writes its own fields, like a command's typed result.
    private struct Reading: Encodable, Sendable, JSONWritable {
        let status: String
        let laps: [Int]
        let note: String?

        func writeFields(to fields: inout JSONFields) throws {
            fields.write("status", status)
            try fields.write("laps", laps)
            fields.write("note", note)
        }
    }

    @Test("frame(writing:) writes exactly the frame of the Codable path, message pushes and ticks")
    func frameWritingMatchesCodable() throws {
        let reusable = ReusableMessageEncoder()
        let doc = Watcher(session: "s1", name: "Doc \"Emmett\" Brown")
        var generator = SeededGenerator(seed: 28)
        for _ in 0..<20 {
            let data = JSONValue.random(depth: 3, using: &generator)
            let message = MessagePush(channel: "starport/bench", from: doc, data: data)
            #expect(bytes(try reusable.frame(writing: message)) == bytes(try MessageEncoder().frame(ViaCodable(value: message))))
            let tick = TickPush(channel: "delorean/a", data: data)
            #expect(bytes(try reusable.frame(writing: tick)) == bytes(try MessageEncoder().frame(ViaCodable(value: tick))))
        }
    }

    @Test("replyFrame writes exactly the frame of ReplyOK, for integer and string ids and escaped text")
    func replyFrameMatchesReplyOK() throws {
        let reusable = ReusableMessageEncoder()
        let results = [
            Reading(status: "running", laps: [1, 2, 3], note: nil),
            Reading(status: "a \"quoted\" \\ path\n", laps: [], note: "x/y"),
        ]
        for id in [RequestID.int(0), .int(Int64(1) << 53), .string("req-\"1\"")] {
            for result in results {
                let direct = try reusable.replyFrame(id: id, result: result)
                #expect(bytes(direct) == bytes(try MessageEncoder().frame(ReplyOK(id: id, result: result))))
                // The reusable encoder's own generic path agrees too.
                #expect(bytes(direct) == bytes(try reusable.frame(ReplyOK(id: id, result: result))))
            }
        }
    }

    @Test("a message that fails to encode leaves the encoder usable")
    func failureThenSuccess() throws {
        let reusable = ReusableMessageEncoder()
        #expect(throws: EncodingError.self) {
            try reusable.frame(ReplyOK(id: .int(1), result: JSONValue.object(["a": .array([.int(1), .double(.nan)])])))
        }
        let message = ReplyOK(id: .int(2), result: JSONValue.object(["b": .int(2)]))
        let frame = try reusable.frame(message)
        #expect(Array(bytes(frame).dropFirst(Frame.headerSize))
                == Array(#"{"type":"reply","id":2,"ok":true,"result":{"b":2}}"#.utf8))
    }
}
