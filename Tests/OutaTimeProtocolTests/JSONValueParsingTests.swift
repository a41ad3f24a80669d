import Foundation
import Testing
import OutaTimeProtocol
import OutaTimeTestKit

/// `JSONValue.parse` (our reader) must read every value exactly as the
/// `Decodable` conformance (JSONDecoder) does, and refuse what RFC 8259 does
/// not allow.
@Suite("JSONValue.parse")
struct JSONValueParsingTests {
    static let samples: [String] = [
        "null", "true", "false", "0", "-0", "1", "-3", "1.0", "1.5", "-2.25", "1e3", "1E2",
        "9007199254740993", "9223372036854775807", "-9223372036854775808",
        "12345678901234567890", "100000000000000000000000", "1e300", "0.1",
        // JSONSerialization hands these over as NSDecimalNumber, whose
        // doubleValue is off in the last digits; read exactly here.
        "-924933.5400390625", "-6676940282306817427", "-9223372036854775809", "0.30000000000000004",
        "-0.0", "1.5e-7", "[-887314.1987957484,-1e-300]",
        #""""#, #""x""#, #""é ✓ \u00e9 \n \" \\ \/""#, #""\ud83d\ude00""#,
        "[]", "[1,false,null,\"a\",[2.5]]", "{}",
        #"{"type":"publish","channel":"starport/bench","data":"0123456789"}"#,
        #"{"a":{"b":[{"c":true}]},"n":-7,"d":0.5,"s":""}"#,
    ]

    @Test("same value as JSONDecoder", arguments: samples)
    func matchesDecodable(_ text: String) throws {
        let data = Data(text.utf8)
        let expected = try JSONDecoder().decode(JSONValue.self, from: data)
        #expect(try JSONValue.parse(data) == expected)
    }

    @Test("integral numbers that fit Int64 are .int, others .double")
    func numberCases() throws {
        #expect(try JSONValue.parse(Data("1.0".utf8)) == .int(1))
        #expect(try JSONValue.parse(Data("true".utf8)) == .bool(true))
        #expect(try JSONValue.parse(Data("1".utf8)) == .int(1))
        #expect(try JSONValue.parse(Data("1.5".utf8)) == .double(1.5))
        // Beyond Int64: the nearest Double, as Swift's own conversion gives it.
        #expect(try JSONValue.parse(Data("12345678901234567890".utf8)) == .double(Double("12345678901234567890")!))
    }

    @Test("invalid JSON throws", arguments: [
        "", " ", "{", "[1,,2]", "tru", "{\"a\" 1}", "\"\u{7f}", "nul", "01", "-", "1.", ".5", "+1", "1e", "1e+",
        "[1 2]", "{\"a\":1 \"b\":2}", "{a:1}", "'x'", "[1]x", "\"tab\there\"", #""\x""#, #""\u12""#,
        "NaN", "Infinity", "-Infinity", "1e400", "-1e400",
        // Stricter than Foundation, which accepts these:
        "[1,]", "{\"a\":1,}", "[1]/* c */", #""\ud800""#, #""\udc00""#, #""\ud800\u0041""#,
    ])
    func invalidThrows(_ text: String) {
        #expect(throws: JSONReadError.self) { try JSONValue.parse(Data(text.utf8)) }
    }

    @Test("errors name the byte and what was expected")
    func errorMessages() {
        #expect(throws: JSONReadError(offset: 6, reason: "expected ':' after an object key")) {
            try JSONValue.parse(Data(#"{"a"  1}"#.utf8))
        }
        #expect(throws: JSONReadError(offset: 3, reason: "expected ',' or ']' in an array")) {
            try JSONValue.parse(Data("[1 2]".utf8))
        }
    }

    @Test("surrogate pairs, escapes and raw UTF-8 read as their characters")
    func strings() throws {
        #expect(try JSONValue.parse(Data(#""\ud83d\ude97 \u00e9 é \/ \b\f\n\r\t""#.utf8)) == .string("🚗 é é / \u{8}\u{C}\n\r\t"))
        #expect(try JSONValue.parse(Data(#"{"k\u0000":"\u0000"}"#.utf8)) == .object(["k\u{0}": .string("\u{0}")]))
    }

    @Test("nesting: 512 levels read, 513 refused")
    func depth() throws {
        let deep = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        _ = try JSONValue.parse(Data(deep.utf8))
        let deeper = String(repeating: "[", count: 513) + String(repeating: "]", count: 513)
        #expect(throws: JSONReadError.self) { try JSONValue.parse(Data(deeper.utf8)) }
        #expect(throws: JSONReadError.self) { try JSONValue.parse(Data(String(repeating: "{\"a\":", count: 600).utf8)) }
    }

    @Test("generated documents read back as written, and as JSONDecoder reads them", arguments: 0..<60)
    func generated(_ seed: Int) throws {
        var generator = SeededGenerator(seed: UInt64(seed) &+ 7_000)
        let value = JSONValue.random(depth: 5, using: &generator)
        for data in [try JSONEncoder().encode(value), Data(try CompactJSONEncoder().encode(value))] {
            #expect(try JSONValue.parse(data) == value)
            #expect(try JSONValue.parse(data) == (try JSONDecoder().decode(JSONValue.self, from: data)))
        }
    }

    /// Random edits of valid documents: the reader never accepts what
    /// JSONDecoder refuses, and when both accept they agree. 3,000 edits by
    /// default; `OUTATIME_JSON_MUTATIONS=N` (and `OUTATIME_JSON_SEED`) for a
    /// longer run by hand.
    @Test("mutated documents: never looser than JSONDecoder, same values when both accept")
    func mutations() throws {
        let environment = ProcessInfo.processInfo.environment
        let count = environment["OUTATIME_JSON_MUTATIONS"].flatMap(Int.init) ?? 3_000
        var generator = SeededGenerator(seed: environment["OUTATIME_JSON_SEED"].flatMap(UInt64.init) ?? 88)
        let alphabet = Array(#"{}[],:"\/-+.eE0123456789 tfnulrsa"#.utf8) + [0x00, 0x1F, 0x7F, 0xC3, 0xA9, 0xFF]
        var accepted = 0
        for _ in 0..<count {
            let value = JSONValue.random(depth: 3, using: &generator)
            var bytes = Array(try JSONEncoder().encode(value))
            for _ in 0..<Int.random(in: 1...3, using: &generator) where !bytes.isEmpty {
                let position = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: bytes.remove(at: position)
                case 1: bytes.insert(alphabet.randomElement(using: &generator)!, at: position)
                default: bytes[position] = alphabet.randomElement(using: &generator)!
                }
            }
            let data = Data(bytes)
            guard let ours = try? JSONValue.parse(data) else { continue }
            accepted += 1
            let reference = try? JSONDecoder().decode(JSONValue.self, from: data)
            #expect(reference.map { Self.sameValue($0, ours) } == true, "\(String(decoding: bytes, as: UTF8.self))")
        }
        #expect(accepted > count / 30, "the mutations should leave some documents valid")
    }

    /// Equal, except for numbers written with more digits than a double
    /// holds: the `Decodable` path then truncates the fraction to an integer
    /// (`2626670578542188.79` → `2626670578542188`, `-62e-99999` → 0) where
    /// the reader keeps the nearest double (`2626670578542189.0`). Those
    /// compare equal when they are within 1 or one ulp (from 2^40 on), or zero.
    static func sameValue(_ a: JSONValue, _ b: JSONValue) -> Bool {
        func number(_ value: JSONValue) -> Double? {
            switch value {
            case .int(let integer): Double(integer)
            case .double(let double): double
            default: nil
            }
        }
        switch (a, b) {
        case (.array(let x), .array(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { sameValue($0, $1) }
        case (.object(let x), .object(let y)):
            return x.count == y.count && x.allSatisfy { key, value in y[key].map { sameValue(value, $0) } ?? false }
        default:
            if a == b { return true }
            guard let x = number(a), let y = number(b) else { return false }
            return x == y && x == 0 || abs(x) >= 0x1p40 && abs(x - y) <= max(1, y.ulp, x.ulp)
        }
    }

    @Test("whole numbers with a fraction or exponent are exact; others keep the nearest double")
    func numberEdges() throws {
        #expect(try JSONValue.parse(Data("90142406901406829e0".utf8)) == .int(90_142_406_901_406_829))
        #expect(try JSONValue.parse(Data("9.0142406901406829e16".utf8)) == .int(90_142_406_901_406_829))
        #expect(try JSONValue.parse(Data("-9223372036854775808.000".utf8)) == .int(.min))
        #expect(try JSONValue.parse(Data("1500e-3".utf8)) == .double(1.5))
        #expect(try JSONValue.parse(Data("1500.000e-3".utf8)) == .double(1.5))
        #expect(try JSONValue.parse(Data("15000e-4".utf8)) == .double(1.5))
        #expect(try JSONValue.parse(Data("2500e-3".utf8)) == .double(2.5))
        #expect(try JSONValue.parse(Data("3000e-3".utf8)) == .int(3))
        #expect(try JSONValue.parse(Data("-208366223654859651.1".utf8)) == .double(-208_366_223_654_859_651.1))
        #expect(try JSONValue.parse(Data("9223372036854775808.0".utf8)) == .double(9_223_372_036_854_775_808))
        #expect(try JSONValue.parse(Data("0e999999999999".utf8)) == .int(0))
        #expect(throws: JSONReadError.self) { try JSONValue.parse(Data("1e999999999999".utf8)) }
    }

    @Test("strings: plain runs, escapes after them, and where a bad string fails")
    func stringRuns() throws {
        #expect(try JSONValue.parse(Data(#""plain ASCII run""#.utf8)) == .string("plain ASCII run"))
        #expect(try JSONValue.parse(Data(#""é then \n and \u0041""#.utf8)) == .string("é then \n and A"))
        #expect(try JSONValue.parse(Data(#"["ab\"c","✓✓"]"#.utf8)) == .array([.string("ab\"c"), .string("✓✓")]))
        #expect(throws: JSONReadError(offset: 3, reason: "control character in a string (escape it)")) {
            try JSONValue.parse(Data("\"ab\u{1}\"".utf8))
        }
        #expect(throws: JSONReadError(offset: 3, reason: "unterminated string")) {
            try JSONValue.parse(Data("\"ab".utf8))
        }
        #expect(throws: JSONReadError(offset: 1, reason: "string is not valid UTF-8")) {
            try JSONValue.parse(Data([0x22, 0x61, 0xFF, 0x62, 0x22]))
        }
    }

    @Test("invalid UTF-8 throws")
    func invalidUTF8() {
        #expect(throws: (any Error).self) { try JSONValue.parse(Data([0x22, 0xFF, 0x22])) }
    }
}
