import Testing
import OutaTimeProtocol

/// Runs `body` and returns the ProtocolError it threw, or nil.
func fieldError<T>(_ body: () throws -> T) -> ProtocolError? {
    do {
        _ = try body()
        return nil
    } catch {
        return error as? ProtocolError
    }
}

@Suite("Request field accessors")
struct RequestFieldTests {
    static let request = Request(type: "history", id: .int(1), fields: [
        "channel": .string("delorean/main"),
        "name": .string("Doc"),
        "limit": .int(5000),
        "after": .int(12),
        "whole": .double(5.0),
        "half": .double(5.5),
        "args": .object(["speed": .int(88)]),
        "list": .array([.int(1)]),
        "nothing": .null,
        "number": .int(42),
        "long": .string(String(repeating: "z", count: 100)),
    ])

    @Test("string: present, missing, wrong type")
    func string() throws {
        #expect(try Self.request.string("name") == "Doc")
        #expect(fieldError { try Self.request.string("missing") }
            == ProtocolError(.invalidRequest, "field 'missing' is required (a string)"))
        #expect(fieldError { try Self.request.string("nothing") }?.message == "field 'nothing' is required (a string)")
        #expect(fieldError { try Self.request.string("number") }
            == ProtocolError(.invalidRequest, "field 'number' must be a string, got 42"))
    }

    @Test("optionalString: absent or null is nil, length is bounded")
    func optionalString() throws {
        #expect(try Self.request.optionalString("missing") == nil)
        #expect(try Self.request.optionalString("nothing") == nil)
        #expect(try Self.request.optionalString("name", maxLength: 3) == "Doc")
        #expect(fieldError { try Self.request.optionalString("long", maxLength: 64) }?.message
            == "field 'long' must be a string of at most 64 characters and at most 256 bytes of UTF-8, got one of 100 characters and 100 bytes")
        // One character of 1,000 combining marks: within 100 characters, not within 400 bytes.
        let zalgo = Request(type: "hello", fields: ["name": .string("a" + String(repeating: "\u{301}", count: 1_000))])
        #expect(fieldError { try zalgo.optionalString("name", maxLength: 100) }
            == ProtocolError(.invalidRequest,
                "field 'name' must be a string of at most 100 characters and at most 400 bytes of UTF-8, got one of 1 character and 2001 bytes"))
        let emoji = String(repeating: "🚗", count: 100)  // 100 characters, 400 bytes: the limit exactly
        #expect(try Request(type: "hello", fields: ["name": .string(emoji)]).optionalString("name", maxLength: 100) == emoji)
        #expect(fieldError { try Self.request.optionalString("args") }?.message
            == "field 'args' must be a string, got an object")
    }

    @Test("int: range and type are checked, with the contract's message")
    func int() throws {
        #expect(try Self.request.int("after", in: 0...Int64.max) == 12)
        #expect(fieldError { try Self.request.int("limit", in: 1...1000) }
            == ProtocolError(.invalidRequest, "field 'limit' must be an integer 1…1000, got 5000"))
        #expect(fieldError { try Self.request.int("missing", in: 1...1000) }?.message
            == "field 'missing' is required (an integer 1…1000)")
        #expect(fieldError { try Self.request.int("name", in: 1...1000) }?.message
            == "field 'name' must be an integer 1…1000, got 'Doc' (a string)")
    }

    /// The JSON reader makes every number whose text is an exact integer
    /// (`5.0` too) an `.int`; a `.double` has a fraction or lies beyond 64
    /// bits, so it is refused even when its nearest double is whole
    /// (`9007199254740992.5` reads as 2^53, `1e-400` as 0).
    @Test("a number written 5.0 counts as an integer; a .double never does")
    func doubles() throws {
        let written = try parse(#"{"type":"history","limit":5.0,"after":1e-400,"since":9007199254740992.5}"#)
        #expect(try written.int("limit", in: 0...10) == 5)
        #expect(fieldError { try written.int("after", in: 0...10) }?.message
            == "field 'after' must be an integer 0…10, got 0.0 (a number with a fraction, or beyond 64 bits)")
        #expect(fieldError { try written.optionalInt("since", in: 0...Int64.max) }?.code == .invalidRequest)
        #expect(fieldError { try Self.request.int("whole", in: 0...10) }?.code == .invalidRequest)
        #expect(fieldError { try Self.request.int("half", in: 0...10) }?.message
            == "field 'half' must be an integer 0…10, got 5.5 (a number with a fraction, or beyond 64 bits)")
    }

    @Test("optionalInt: absent or null is nil, present is checked")
    func optionalInt() throws {
        #expect(try Self.request.optionalInt("missing", in: 0...10) == nil)
        #expect(try Self.request.optionalInt("nothing", in: 0...10) == nil)
        #expect(try Self.request.optionalInt("after", in: 0...100) == 12)
        #expect(fieldError { try Self.request.optionalInt("list", in: 0...10) }?.message
            == "field 'list' must be an integer 0…10, got an array of 1 items")
    }

    @Test("optionalObject: absent is nil, non-objects are refused")
    func optionalObject() throws {
        #expect(try Self.request.optionalObject("args") == ["speed": .int(88)])
        #expect(try Self.request.optionalObject("missing") == nil)
        let error = fieldError { try Self.request.optionalObject("number") }
        #expect(error?.code == .invalidRequest)
        #expect(error?.message == "field 'number' must be an object, got 42")
    }

    @Test("value returns raw JSON, null included")
    func value() {
        #expect(Self.request.value("nothing") == .null)
        #expect(Self.request.value("missing") == nil)
        #expect(Self.request.value("list") == .array([.int(1)]))
    }

    @Test("channel: parsed, or an error naming the field or the channel")
    func channel() throws {
        #expect(try Self.request.channel() == ChannelName(kind: .delorean, name: "main"))
        #expect(fieldError { try Self.request.channel("missing") }
            == ProtocolError(.invalidRequest, "field 'missing' is required (a string like 'delorean/main')"))
        #expect(fieldError { try Self.request.channel("number") }?.message
            == "field 'number' must be a string like 'delorean/main', got 42")
        #expect(fieldError { try Self.request.channel("name") }?.code == .invalidChannel)

        let unknown = Request(type: "get", fields: ["channel": .string("foo/bar")])
        #expect(fieldError { try unknown.channel() }?.code == .unknownKind)
    }

    @Test("long strings are summarized in messages")
    func longStringSummarized() {
        let message = fieldError { try Self.request.int("long", in: 0...1) }?.message ?? ""
        #expect(message.contains("a string of 100 characters"))
        #expect(message.count < 120)
    }
}
