import Foundation
import Testing
@testable import OutaTimeProtocol
import OutaTimeTestKit

/// The eight-bytes-at-a-time scan of plain string bytes, against the
/// byte-at-a-time rule it replaces, and the reader and writer through it.
@Suite("JSON string scan (SWAR)")
struct JSONStringScanTests {
    /// The rule, one byte at a time.
    private static func reference(_ bytes: [UInt8], from start: Int) -> (end: Int, high: Bool) {
        var end = start
        var high = false
        while end < bytes.count {
            let byte = bytes[end]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            if byte >= 0x80 { high = true }
            end += 1
        }
        return (end, high)
    }

    private static func scan(_ bytes: [UInt8], from start: Int) -> (end: Int, high: Bool) {
        bytes.withUnsafeBytes { raw in
            var high: UInt8 = 0
            let end = JSONStringScan.plainRunEnd(raw.baseAddress!, from: start, count: raw.count, high: &high)
            return (end, high >= 0x80)
        }
    }

    @Test("every byte value at every position of two words ends the run exactly when the rule says")
    func everyByteEveryPosition() {
        for value in 0...255 {
            for position in 0..<17 {
                var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: 17)
                bytes[position] = UInt8(value)
                for start in [0, 1, 7] where start <= position {
                    let expected = Self.reference(bytes, from: start)
                    let got = Self.scan(bytes, from: start)
                    #expect(got.end == expected.end, "byte \(value) at \(position), from \(start)")
                    #expect(got.high == expected.high, "byte \(value) at \(position), from \(start)")
                }
            }
        }
    }

    @Test("seeded random runs: the same end as the rule, from every start")
    func randomRuns() {
        var generator = SeededGenerator(seed: 28)
        // Mostly plain bytes, some specials and high bytes, lengths 0…40.
        let alphabet: [UInt8] = Array(0x20...0x7E).filter { $0 != 0x22 && $0 != 0x5C } + [0x00, 0x1F, 0x22, 0x5C, 0x7F, 0x80, 0xC3, 0xFF]
        for _ in 0..<2_000 {
            let count = Int.random(in: 0...40, using: &generator)
            let bytes = (0..<count).map { _ in alphabet.randomElement(using: &generator)! }
            for start in 0...count {
                #expect(Self.scan(bytes, from: start).end == Self.reference(bytes, from: start).end, "\(bytes) from \(start)")
            }
        }
    }

    @Test("strings read and written through the scan come back as they were, escapes and all")
    func roundTrip() throws {
        let texts = [
            "", "a", "plain ascii text longer than eight bytes", String(repeating: "x", count: 64),
            "quote \" in the middle of a long run", "back\\slash after seven", "tab\tand\nnewline and \u{1} control",
            "ünïcödé text past eight bytes ✓ and 🚀", "\u{7F} delete is not escaped", "ends with quote\"",
            "12345678\"12345678\\12345678\u{0}",
        ]
        for text in texts {
            let encoded = try CompactJSONEncoder().encode(["data": text])
            let reference = try JSONEncoder().encode(["data": text])
            #expect(try JSONValue.parse(Data(encoded)) == JSONValue.parse(Data(reference)), "\(text)")
            #expect(try JSONValue.parse(Data(encoded)) == .object(["data": .string(text)]), "\(text)")
        }
    }

    @Test("a control character or bad UTF-8 inside a long run is still refused by the reader")
    func refusals() {
        let control = Data("{\"data\":\"0123456789\u{01}abcdef\"}".utf8)
        #expect(throws: JSONReadError.self) { try JSONValue.parse(control) }
        var bad = Data("{\"data\":\"0123456789".utf8)
        bad.append(contentsOf: [0xC3, 0x28])  // an invalid UTF-8 sequence
        bad.append(contentsOf: Data("abcdefgh\"}".utf8))
        #expect(throws: JSONReadError.self) { try JSONValue.parse(bad) }
    }
}
