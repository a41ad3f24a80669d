import Foundation
import Testing
import OutaTimeProtocol

/// `JSONValue.parse` (JSONSerialization) must read every value exactly as
/// the `Decodable` conformance (JSONDecoder) does.
@Suite("JSONValue.parse")
struct JSONValueParsingTests {
    static let samples: [String] = [
        "null", "true", "false", "0", "-0", "1", "-3", "1.0", "1.5", "-2.25", "1e3", "1E2",
        "9007199254740993", "9223372036854775807", "-9223372036854775808",
        "12345678901234567890", "100000000000000000000000", "1e300", "0.1",
        // JSONSerialization hands these over as NSDecimalNumber, whose
        // doubleValue is off in the last digits.
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
        #expect(try JSONValue.parse(Data("12345678901234567890".utf8)) == .double(12345678901234567890))
    }

    // Both Foundation parsers accept a trailing comma (`[1,]`), so that is
    // not in this list: parity with JSONDecoder is what matters here.
    @Test("invalid JSON throws", arguments: ["", "{", "[1,,2]", "tru", "{\"a\" 1}", "\"\u{7f}", "nul"])
    func invalidThrows(_ text: String) {
        #expect(throws: (any Error).self) { try JSONValue.parse(Data(text.utf8)) }
    }

    @Test("invalid UTF-8 throws")
    func invalidUTF8() {
        #expect(throws: (any Error).self) { try JSONValue.parse(Data([0x22, 0xFF, 0x22])) }
    }
}
