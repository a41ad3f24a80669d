import Foundation

extension JSONValue {
    /// Parses JSON text (any value at the top level, RFC 8259) into a value.
    ///
    /// Numbers follow the `Decodable` rule: a whole value that fits in
    /// `Int64` is `.int` (`5`, `5.0`, `5e0`, computed exactly), any other
    /// finite number `.double`, the nearest one to the text (so the shortest
    /// text that round-trips reads back as the same double). Where the
    /// `Decodable` path truncates (`-208366223654859651.1` becomes an
    /// integer there), this one keeps the double.
    ///
    /// - Throws: ``JSONReadError`` naming the byte offset and what was wrong.
    public static func parse(_ data: Data) throws(JSONReadError) -> JSONValue {
        let result = data.withUnsafeBytes { bytes in
            Result { () throws(JSONReadError) -> JSONValue in try parse(bytes: bytes) }
        }
        return try result.get()
    }

    /// Parses JSON text from raw UTF-8 bytes, read only during the call.
    public static func parse(bytes: UnsafeRawBufferPointer) throws(JSONReadError) -> JSONValue {
        var reader = JSONReader(bytes)
        return try reader.readDocument()
    }
}

/// Why JSON text was refused: what was expected, at which byte.
public struct JSONReadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Offset of the offending byte (or of the end) from the start of the text.
    public let offset: Int
    /// What was wrong, e.g. `expected ':' after an object key`.
    public let reason: String

    /// Creates an error.
    public init(offset: Int, reason: String) {
        self.offset = offset
        self.reason = reason
    }

    /// `reason at byte N`.
    public var description: String { "\(reason) at byte \(offset)" }
}

/// A strict RFC 8259 reader from UTF-8 bytes straight to ``JSONValue``.
///
/// **Why not Foundation's `JSONSerialization`** (a deliberate deviation,
/// docs/BENCHMARKS.md): every request goes through here, and the Foundation
/// path — parse into `NSNumber`/`[String: Any]`, then a dynamic cast per
/// value to convert — was a fifth of the event loop's time per durable
/// command; it also returned some numbers inexactly (an `NSDecimalNumber`'s
/// `doubleValue` is off in the last digits). This reader builds the values
/// directly and reads numbers with the standard library's exact `Int64` and
/// `Double` text initialisers. The tests compare it with `JSONDecoder` on a
/// corpus and on generated documents, and fuzz it with mutations.
///
/// Strict where Foundation is lenient: no trailing commas, no comments, no
/// lone surrogate escapes, no non-finite numbers (`1e400`), at most 512
/// levels of nesting. Duplicate keys: the last one wins.
/// One member of a request object as sent. A struct, not a tuple: an array
/// of tuples is destroyed element by element through the tuple's generic
/// value witness, one such array per request (callgrind, issue 28).
struct JSONMember {
    let key: String
    let value: JSONValue
}

struct JSONReader {
    static let maxDepth = 512

    private let bytes: UnsafeRawBufferPointer
    private var index = 0
    private var depth = 0

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    mutating func readDocument() throws(JSONReadError) -> JSONValue {
        skipWhitespace()
        let value = try readValue()
        skipWhitespace()
        guard index == bytes.count else { throw fail("unexpected text after the JSON value") }
        return value
    }

    private func fail(_ reason: String) -> JSONReadError {
        JSONReadError(offset: index, reason: reason)
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func readValue() throws(JSONReadError) -> JSONValue {
        guard let byte = current else { throw fail("expected a value, found the end of the text") }
        switch byte {
        case UInt8(ascii: "{"): return try readObject()
        case UInt8(ascii: "["): return try readArray()
        case UInt8(ascii: "\""): return .string(try readString())
        case UInt8(ascii: "t"): try readLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try readLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try readLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try readNumber()
        default: throw fail("expected a value (object, array, string, number, true, false or null)")
        }
    }

    private mutating func readLiteral(_ word: StaticString) throws(JSONReadError) {
        let count = word.utf8CodeUnitCount
        guard bytes.count - index >= count else { throw fail("expected '\(word)'") }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
            throw fail("expected '\(word)'")
        }
        index += count
    }

    private mutating func enter() throws(JSONReadError) {
        depth += 1
        guard depth <= Self.maxDepth else { throw fail("nested deeper than \(Self.maxDepth) levels") }
    }

    private mutating func readObject() throws(JSONReadError) -> JSONValue {
        // Room for a request's members (type, id, channel, action, args)
        // from the start: growing 1 → 3 → 6 rehashed every key each time.
        var members = [String: JSONValue](minimumCapacity: 6)
        try readMembers(into: &members) { members, key, value in members[key] = value }
        return .object(members)
    }

    /// A document that is one object, as its members in order (a repeated
    /// key appears twice: readers take the last, as ``JSONValue/object(_:)``
    /// keeps it); nil, having read nothing, when the document does not
    /// start with `{`. A request is such an
    /// object: a handful of members read once each, which a short array
    /// serves without hashing every key twice (docs/BENCHMARKS.md).
    mutating func readTopLevelMembers() throws(JSONReadError) -> [JSONMember]? {
        skipWhitespace()
        guard current == UInt8(ascii: "{") else { return nil }
        var members: [JSONMember] = []
        members.reserveCapacity(6)
        try readMembers(into: &members) { members, key, value in members.append(JSONMember(key: key, value: value)) }
        skipWhitespace()
        guard index == bytes.count else { throw fail("unexpected text after the JSON value") }
        return members
    }

    /// Reads `{…}` from its `{`, handing each member to `add`.
    @inline(__always)
    private mutating func readMembers<Sink>(
        into sink: inout Sink, _ add: (inout Sink, String, JSONValue) -> Void
    ) throws(JSONReadError) {
        try enter()
        index += 1  // {
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return
        }
        while true {
            guard current == UInt8(ascii: "\"") else { throw fail("expected a string key") }
            let key = try readKey()
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw fail("expected ':' after an object key") }
            index += 1
            skipWhitespace()
            add(&sink, key, key == "type" ? try readTypeValue() : try readValue())
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","):
                index += 1
                skipWhitespace()
            case UInt8(ascii: "}"):
                index += 1
                depth -= 1
                return
            default:
                throw fail("expected ',' or '}' in an object")
            }
        }
    }

    private mutating func readArray() throws(JSONReadError) -> JSONValue {
        try enter()
        index += 1  // [
        var elements: [JSONValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            elements.append(try readValue())
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","):
                index += 1
                skipWhitespace()
            case UInt8(ascii: "]"):
                index += 1
                depth -= 1
                return .array(elements)
            default:
                throw fail("expected ',' or ']' in an array")
            }
        }
    }

    /// Whether the string starting at `start` (after its opening quote) is
    /// exactly `word`, unescaped, followed by its closing quote: the test
    /// of ``readKey()`` and ``readTypeValue()``.
    @inline(__always)
    private func literal(_ word: StaticString, at start: Int, in base: UnsafeRawPointer) -> Bool {
        let count = word.utf8CodeUnitCount
        guard start + count < bytes.count, bytes[start + count] == UInt8(ascii: "\"") else { return false }
        return memcmp(base + start, word.utf8Start, count) == 0
    }

    /// An object key from its opening quote. The keys every request
    /// carries (`type`, `id`, `channel`, `data`, a command's `action` and
    /// `args`) come back as literals when written plainly: no string is
    /// built, checked and released for them per request (a sixth of a
    /// `publish` request's parse under callgrind, issue 28). Any other key,
    /// or one with escapes, is read as ``readString()`` reads it, so the
    /// result is the same string either way.
    @inline(__always)
    private mutating func readKey() throws(JSONReadError) -> String {
        let start = index + 1
        if let base = bytes.baseAddress, start < bytes.count {
            @inline(__always) func plain(_ word: StaticString) -> Bool { literal(word, at: start, in: base) }
            let known: String?
            switch bytes[start] {
            case UInt8(ascii: "t"): known = plain("type") ? "type" : nil
            case UInt8(ascii: "i"): known = plain("id") ? "id" : nil
            case UInt8(ascii: "c"): known = plain("channel") ? "channel" : nil
            case UInt8(ascii: "d"): known = plain("data") ? "data" : nil
            case UInt8(ascii: "a"): known = plain("action") ? "action" : plain("args") ? "args" : nil
            default: known = nil
            }
            if let known {
                index = start + known.utf8.count + 1
                return known
            }
        }
        return try readString()
    }

    /// The value of a `type` member: the operations of the contract (§3)
    /// come back as literals when written plainly, as ``readKey()`` does
    /// for keys; anything else is read as ``readValue()`` reads it.
    private mutating func readTypeValue() throws(JSONReadError) -> JSONValue {
        let start = index + 1
        if current == UInt8(ascii: "\""), let base = bytes.baseAddress, start < bytes.count {
            @inline(__always) func plain(_ word: StaticString) -> Bool { literal(word, at: start, in: base) }
            let known: String?
            switch bytes[start] {
            case UInt8(ascii: "p"): known = plain("publish") ? "publish" : plain("ping") ? "ping" : nil
            case UInt8(ascii: "c"): known = plain("command") ? "command" : nil
            case UInt8(ascii: "s"): known = plain("subscribe") ? "subscribe" : plain("stats") ? "stats" : nil
            case UInt8(ascii: "u"): known = plain("unsubscribe") ? "unsubscribe" : nil
            case UInt8(ascii: "g"): known = plain("get") ? "get" : nil
            case UInt8(ascii: "h"): known = plain("history") ? "history" : plain("hello") ? "hello" : nil
            case UInt8(ascii: "l"): known = plain("list") ? "list" : nil
            default: known = nil
            }
            if let known {
                index = start + known.utf8.count + 1
                return .string(known)
            }
        }
        return try readValue()
    }

    /// A string from its opening quote; plain runs are copied as they are,
    /// escapes decoded, and the whole checked to be valid UTF-8.
    private mutating func readString() throws(JSONReadError) -> String {
        index += 1  // "
        let start = index
        // Fast path: no escapes. The run is scanned over locals and the
        // reader's `index` set once after it: the loop over `self.index`
        // cost about 20 instructions a byte, a fifth of a `publish` request
        // under callgrind (issue 28).
        // Eight bytes at a time where it can (``JSONStringScan``).
        var end = start
        var high: UInt8 = 0  // any byte >= 0x80 sets the top bit
        if let base = bytes.baseAddress {
            end = JSONStringScan.plainRunEnd(base, from: start, count: bytes.count, high: &high)
        }
        index = end
        if let byte = current {
            if byte == UInt8(ascii: "\"") {
                let run = UnsafeRawBufferPointer(rebasing: bytes[start..<index])
                index += 1
                if high < 0x80 { return String(decoding: run, as: UTF8.self) }
                guard let text = String(validating: run, as: UTF8.self) else {
                    index = start
                    throw fail("string is not valid UTF-8")
                }
                return text
            }
            if byte < 0x20 { throw fail("control character in a string (escape it)") }
        }
        // Slow path: escapes.
        var utf8 = [UInt8](UnsafeRawBufferPointer(rebasing: bytes[start..<index]))
        while true {
            guard let byte = current else { throw fail("unterminated string") }
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                guard let text = String(validating: utf8, as: UTF8.self) else {
                    throw fail("string is not valid UTF-8")
                }
                return text
            case UInt8(ascii: "\\"):
                index += 1
                try readEscape(into: &utf8)
            case ..<0x20:
                throw fail("control character in a string (escape it)")
            default:
                utf8.append(byte)
                index += 1
            }
        }
    }

    private mutating func readEscape(into utf8: inout [UInt8]) throws(JSONReadError) {
        guard let byte = current else { throw fail("unterminated escape") }
        index += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(byte)
        case UInt8(ascii: "b"): utf8.append(0x08)
        case UInt8(ascii: "f"): utf8.append(0x0C)
        case UInt8(ascii: "n"): utf8.append(0x0A)
        case UInt8(ascii: "r"): utf8.append(0x0D)
        case UInt8(ascii: "t"): utf8.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = UInt32(try readHex4())
            if (0xD800...0xDBFF).contains(scalar) {
                guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                    throw fail("high surrogate escape without its low surrogate")
                }
                index += 2
                let low = UInt32(try readHex4())
                guard (0xDC00...0xDFFF).contains(low) else { throw fail("high surrogate escape without its low surrogate") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw fail("low surrogate escape without a high surrogate")
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw fail("invalid \\u escape") }
            utf8.append(contentsOf: String(Character(unicode)).utf8)
        default:
            index -= 1
            throw fail("invalid escape '\\\(Character(Unicode.Scalar(byte)))'")
        }
    }

    private mutating func readHex4() throws(JSONReadError) -> UInt16 {
        guard bytes.count - index >= 4 else { throw fail("\\u needs four hex digits") }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw fail("\\u needs four hex digits")
            }
            value = value << 4 | UInt16(digit)
            index += 1
        }
        return value
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, read exactly.
    private mutating func readNumber() throws(JSONReadError) -> JSONValue {
        let start = index
        if current == UInt8(ascii: "-") { index += 1 }
        guard let first = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else {
            throw fail("expected a digit")
        }
        if first == UInt8(ascii: "0") {
            index += 1
        } else {
            skipDigits()
        }
        var integral = true
        if current == UInt8(ascii: ".") {
            integral = false
            index += 1
            guard skipDigits() > 0 else { throw fail("expected a digit after the decimal point") }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            integral = false
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard skipDigits() > 0 else { throw fail("expected a digit in the exponent") }
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        if integral, let integer = Int64(text) { return .int(integer) }
        // `90142406901406829e0`, `1.50e1`: integers written with a fraction
        // or an exponent are read exactly, not through a double.
        if !integral, let integer = Self.exactInteger(UnsafeRawBufferPointer(rebasing: bytes[start..<index])) {
            return .int(integer)
        }
        guard let double = Double(text), double.isFinite else {
            index = start
            throw fail("number \(text) is out of range")
        }
        // Not a whole number (or beyond Int64): the nearest double, even
        // where that double happens to be whole (`-208366223654859651.1`).
        return .double(double)
    }

    /// The value of a number with a fraction or exponent when it is a whole
    /// number that fits in `Int64`, computed exactly; nil otherwise.
    static func exactInteger(_ number: UnsafeRawBufferPointer) -> Int64? {
        var index = 0
        let negative = number.first == UInt8(ascii: "-")
        if negative { index += 1 }
        var digits: [UInt8] = []
        var fractionDigits = 0
        var inFraction = false
        while index < number.count {
            let byte = number[index]
            if byte == UInt8(ascii: ".") {
                inFraction = true
            } else if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                digits.append(byte - UInt8(ascii: "0"))
                if inFraction { fractionDigits += 1 }
            } else {
                break  // e or E
            }
            index += 1
        }
        // Zero is zero whatever the exponent (`0e999999999999`).
        guard digits.contains(where: { $0 != 0 }) else { return 0 }
        var exponent = 0
        if index < number.count {
            index += 1
            var exponentNegative = false
            if number[index] == UInt8(ascii: "-") || number[index] == UInt8(ascii: "+") {
                exponentNegative = number[index] == UInt8(ascii: "-")
                index += 1
            }
            while index < number.count {
                // Anything beyond a few digits cannot give an Int64 (or is all zeros, handled below).
                guard exponent < 10_000 else { return nil }
                exponent = exponent * 10 + Int(number[index] - UInt8(ascii: "0"))
                index += 1
            }
            if exponentNegative { exponent = -exponent }
        }
        exponent -= fractionDigits
        // Leading zeros add nothing; trailing zeros cancel a negative exponent.
        while let first = digits.first, first == 0 { digits.removeFirst() }
        while exponent < 0, let last = digits.last, last == 0 {
            digits.removeLast()
            exponent += 1
        }
        guard exponent >= 0, digits.count + exponent <= 19 else { return nil }
        var magnitude: UInt64 = 0
        for digit in digits + [UInt8](repeating: 0, count: exponent) {
            let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(digit))
            guard !overflow1, !overflow2 else { return nil }
            magnitude = sum
        }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { return nil }
            return magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude)
        }
        return magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil
    }

    @discardableResult
    private mutating func skipDigits() -> Int {
        let start = index
        while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") { index += 1 }
        return index - start
    }
}

extension JSONReader {
    /// The JSON text of the top-level object's member `key` exactly as
    /// written (`1e-400`, not the `0.0` it reads as), or nil when the text
    /// is not an object or has no such member. The last one wins, as in
    /// ``JSONValue/parse(bytes:)``. For error messages only: it reads the
    /// whole text a second time.
    static func memberText(_ key: String, in bytes: UnsafeRawBufferPointer) -> String? {
        var reader = JSONReader(bytes)
        return try? reader.readMemberText(key)
    }

    private mutating func readMemberText(_ key: String) throws(JSONReadError) -> String? {
        skipWhitespace()
        guard current == UInt8(ascii: "{") else { return nil }
        index += 1
        skipWhitespace()
        var found: String?
        while current == UInt8(ascii: "\"") {
            let name = try readString()
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { return found }
            index += 1
            skipWhitespace()
            let start = index
            _ = try readValue()
            if name == key {
                found = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            }
            skipWhitespace()
            guard current == UInt8(ascii: ",") else { break }
            index += 1
            skipWhitespace()
        }
        return found
    }
}
