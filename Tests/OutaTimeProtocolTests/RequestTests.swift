import Foundation
import Testing
import OutaTimeProtocol

/// Parses `text` as a frame body.
func parse(_ text: String) throws -> Request {
    try parse(Array(text.utf8))
}

/// Parses raw bytes as a frame body.
func parse(_ bytes: [UInt8]) throws -> Request {
    try bytes.withUnsafeBytes { body in
        try Request.parse(body)
    }
}

/// The parse error for `text`, or nil if it parsed.
func parseError(_ text: String) -> RequestParseError? {
    parseError(Array(text.utf8))
}

func parseError(_ bytes: [UInt8]) -> RequestParseError? {
    do {
        _ = try parse(bytes)
        return nil
    } catch {
        return error as? RequestParseError
    }
}

@Suite("Request.parse")
struct RequestTests {
    @Test("the envelope's keys and type, read as literals when plain, give the members Foundation's decoder reads", arguments: [
        #"{"typ\u0065":"ping","\u0069d":3,"ch\u0061nnel":"a/b"}"#,
        #"{"type":"publish","channel":"starport/x","data":{"type":"x","id":[1,{"data":"\"q\" \\ \u00e9"}],"args":-1.5,"action":"é🚗"}}"#,
        #"{"types":"a","type":"ping","i":1,"idx":2,"channels":3,"datum":4,"arg":5,"actions":6,"":7,"t":8,"d":9}"#,
        #"{"type":"ping","data":[2,[3,{"id":null}]],"args":{"args":{}}}"#,
        "{ \"type\" : \"ping\" ,\t\"id\"\t:\r\n1 , \"action\":true }",
        #"{"type":"publis","id":1}"#,
        #"{"type":"publish\u0020","channel":"x/y"}"#,
        #"{"type":"pub\u006cish","data":{"type":"command","x":{"type":"pings"}}}"#,
        #"{"id":"subscribe","type":"unsubscribe","data":"get"}"#,
        #"{"tÿpe":1,"type":"ping","dätä":"ü","data":"\ud83d\ude97"}"#,
    ])
    func envelopeKeys(text: String) throws {
        let request = try parse(text)
        guard case .object(let expected) = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) else {
            Issue.record("not an object: \(text)")
            return
        }
        #expect(request.fields == expected)
        #expect(request.type == expected["type"].flatMap { if case .string(let type) = $0 { type } else { nil } })
    }

    @Test("a body cut off in or after an envelope key is bad_json with the reader's position and reason", arguments: [
        (#"{"type"#, "unterminated string at byte 6"),
        (#"{"type""#, "expected ':' after an object key at byte 7"),
        (#"{"channel":"#, "expected a value, found the end of the text at byte 11"),
        (#"{"id"#, "unterminated string at byte 4"),
        (#"{"data"x"#, "expected ':' after an object key at byte 7"),
        (#"{"type":"ping","args"}"#, "expected ':' after an object key at byte 21"),
        (#"{"type":"publish"#, "unterminated string at byte 16"),
        (#"{"type":"publish""#, "expected ',' or '}' in an object at byte 17"),
        (#"{"type":"publish"]"#, "expected ',' or '}' in an object at byte 17"),
    ])
    func cutEnvelope(text: String, reason: String) {
        guard case .badJSON(let error)? = parseError(text) else {
            Issue.record("expected badJSON for \(text)")
            return
        }
        #expect(error.code == .badJSON)
        #expect(error.message == "frame body of \(text.utf8.count) bytes is not valid UTF-8 JSON (\(reason)); it starts with '\(text)'")
    }

    @Test("a valid request keeps type, id and every field")
    func valid() throws {
        let request = try parse(#"{"type":"subscribe","id":7,"channel":"delorean/main","future":[1,2]}"#)
        #expect(request.type == "subscribe")
        #expect(request.id == .int(7))
        #expect(request.fields.count == 4)
        #expect(request.fields["channel"] == .string("delorean/main"))
        #expect(request.fields["future"] == .array([.int(1), .int(2)]))
    }

    @Test("valid ids", arguments: [
        (#"0"#, RequestID.int(0)),
        (#"9007199254740992"#, .int(9_007_199_254_740_992)),
        (#"5.0"#, .int(5)),
        (#""a-1""#, .string("a-1")),
        (#""""#, .string("")),
        ("\"" + String(repeating: "k", count: 64) + "\"", .string(String(repeating: "k", count: 64))),
    ])
    func validIDs(json: String, id: RequestID) throws {
        #expect(try parse(#"{"type":"ping","id":\#(json)}"#).id == id)
    }

    @Test("an absent or null id is nil", arguments: [#"{"type":"ping"}"#, #"{"type":"ping","id":null}"#])
    func absentID(text: String) throws {
        #expect(try parse(text).id == nil)
    }

    @Test("bodies that are not UTF-8 JSON are bad_json", arguments: [
        Array("".utf8),
        Array("{".utf8),
        Array("nope".utf8),
        Array(#"{"type":"ping""#.utf8),
        Array(#"{"type":"ping"} trailing"#.utf8),
        [0xFF, 0xFE],
        [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D],  // {"a":"<invalid UTF-8>"}
    ])
    func invalidJSON(bytes: [UInt8]) {
        guard case .badJSON(let error)? = parseError(bytes) else {
            Issue.record("expected badJSON for \(bytes)")
            return
        }
        #expect(error.code == .badJSON)
        #expect(error.message.contains("not valid UTF-8 JSON"))
    }

    @Test("JSON that is not an object is bad_json naming what it got", arguments: [
        ("42", "integer"), (#""x""#, "string"), ("[1]", "array"), ("null", "null"), ("true", "boolean"), ("1.5", "number"),
    ])
    func notAnObject(text: String, typeName: String) {
        guard case .badJSON(let error)? = parseError(text) else {
            Issue.record("expected badJSON for \(text)")
            return
        }
        #expect(error.code == .badJSON)
        #expect(error.message.contains("JSON object"))
        #expect(error.message.hasSuffix("got \(typeName)"))
    }

    @Test("bad ids are invalid_request without an id", arguments: [
        "-1", "9007199254740993", "\"" + String(repeating: "k", count: 65) + "\"", "true", "1.5", "{}", "[7]", "1e300",
    ])
    func badID(json: String) {
        guard case .invalid(let id, let error)? = parseError(#"{"type":"ping","id":\#(json)}"#) else {
            Issue.record("expected invalid for id \(json)")
            return
        }
        #expect(id == nil)
        #expect(error.code == .invalidRequest)
        #expect(error.message.hasPrefix(
            "field 'id' must be an integer 0…9007199254740992 or a string of at most 64 characters and at most 256 bytes of UTF-8, got"))
    }

    /// Issue 13's corpus: numbers whose text is not an exact integer were
    /// echoed as their nearest double (`0`, 2^53). They are refused, and the
    /// message quotes the id as the client wrote it.
    @Test("an id number whose text is not an exact integer is refused, named as written", arguments: [
        "1e-400", "9007199254740992.5", "0.5", "-0.5", "1.0000000000000000001", "9007199254740991.9999999",
        "1e20", "99999999999999999999", "18446744073709551616",
    ])
    func inexactNumberID(json: String) {
        guard case .invalid(let id, let error)? = parseError(#"{"type":"ping","id":\#(json)}"#) else {
            Issue.record("id \(json) was accepted")
            return
        }
        #expect(id == nil)
        #expect(error.code == .invalidRequest)
        #expect(error.message.hasSuffix("got \(json)"), "\(error.message)")
    }

    @Test("an id number whose text is an exact integer is accepted however it is written", arguments: [
        ("1e2", Int64(100)), ("100.000", 100), ("0e400", 0), ("-0", 0), ("9007199254740992.0", 9_007_199_254_740_992),
        ("90071992547409.92e2", 9_007_199_254_740_992),
    ])
    func exactNumberID(json: String, value: Int64) throws {
        #expect(try parse(#"{"type":"ping","id":\#(json)}"#).id == .int(value))
    }

    /// String ids: 64 characters and 256 bytes (TextLength), so one
    /// character of hundreds of combining marks is refused.
    @Test("string ids are bounded in characters and in bytes")
    func stringIDLength() throws {
        let accents = String(repeating: "é", count: 64)  // 64 characters, 128 bytes
        #expect(try parse(#"{"type":"ping","id":"\#(accents)"}"#).id == .string(accents))
        let zalgo = "a" + String(repeating: "\u{301}", count: 200)  // 1 character, 401 bytes
        guard case .invalid(nil, let error)? = parseError(#"{"type":"ping","id":"\#(zalgo)"}"#) else {
            Issue.record("a 401-byte id was accepted")
            return
        }
        #expect(error.message.contains("1 character and 401 bytes"), "\(error.message)")
        #expect(error.message.utf8.count < 400, "the message quotes only the start of the id")
    }

    @Test("a bad id is reported even when type is missing too")
    func badIDBeforeType() {
        guard case .invalid(let id, let error)? = parseError(#"{"id":-1}"#) else {
            Issue.record("expected invalid")
            return
        }
        #expect(id == nil)
        #expect(error.message.contains("field 'id'"))
        #expect(error.message.hasSuffix("got -1"))
    }

    @Test("a missing type carries the valid id", arguments: [
        (#"{"id":3}"#, RequestID.int(3)), (#"{"id":"r1","type":null}"#, .string("r1")),
    ])
    func missingType(text: String, expectedID: RequestID) {
        guard case .invalid(let id, let error)? = parseError(text) else {
            Issue.record("expected invalid for \(text)")
            return
        }
        #expect(id == expectedID)
        #expect(error.code == .invalidRequest)
        #expect(error.message == "field 'type' is required (a string naming the operation, like 'subscribe')")
    }

    @Test("a non-string type names what it got")
    func typeNotString() {
        guard case .invalid(let id, let error)? = parseError(#"{"id":"abc","type":42}"#) else {
            Issue.record("expected invalid")
            return
        }
        #expect(id == .string("abc"))
        #expect(error.message.contains("field 'type' must be a string"))
        #expect(error.message.hasSuffix("got 42"))
    }

    @Test("a missing type without id has no id")
    func missingTypeNoID() {
        #expect(parseError(#"{"channel":"laps/a"}"#) == .invalid(id: nil, ProtocolError(
            .invalidRequest, "field 'type' is required (a string naming the operation, like 'subscribe')"
        )))
    }

    @Test("a repeated member counts by its last value, in the accessors and in fields alike")
    func repeatedMemberLastWins() throws {
        let request = try parse(#" {"type":"ping","channel":"laps/a","id":1,"channel":"laps/b","type":"get"} "#)
        #expect(request.type == "get")
        #expect(request.id == .int(1))
        #expect(request.value("channel") == .string("laps/b"))
        #expect(try request.channel().description == "laps/b")
        #expect(request.fields == ["type": .string("get"), "id": .int(1), "channel": .string("laps/b")])
        #expect(request.value("absent") == nil)
    }

    @Test("the built initializer puts type and id into fields")
    func builtRequest() {
        let request = Request(type: "get", id: .string("q"), fields: ["channel": .string("laps/a")])
        #expect(request.fields["type"] == .string("get"))
        #expect(request.fields["id"] == .string("q"))
        #expect(request.fields["channel"] == .string("laps/a"))
    }
}
