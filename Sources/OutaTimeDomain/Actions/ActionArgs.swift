import Foundation
import OutaTimeProtocol

/// A command's `args` object with typed accessors. Every failure is
/// `invalid_args` (or `invalid_time` for times) with a message that names
/// the field, what was given and what is allowed.
public struct ActionArgs: Sendable, Equatable {
    /// The raw arguments.
    public var values: [String: JSONValue]

    /// Wraps an `args` object.
    public init(_ values: [String: JSONValue] = [:]) {
        self.values = values
    }

    /// The value of `key`; JSON `null` counts as absent.
    public func value(_ key: String) -> JSONValue? {
        guard let value = values[key], value != .null else { return nil }
        return value
    }

    /// True when `key` is present and not null.
    public func has(_ key: String) -> Bool { value(key) != nil }

    /// A required string of `length` characters and at most 4 × its upper
    /// bound bytes of UTF-8 (``TextLength``); `freeText` as in
    /// ``optionalString(_:length:freeText:)``.
    public func string(_ key: String, length: ClosedRange<Int> = 0...Int.max, freeText: Bool = false) throws(ProtocolError) -> String {
        guard let text = try optionalString(key, length: length, freeText: freeText) else {
            throw ProtocolError(.invalidArgs, "argument '\(key)' is required (a string\(TextLength(characters: length).describedRule))")
        }
        return text
    }

    /// An optional string of `length` characters and at most 4 × its upper
    /// bound bytes of UTF-8 (``TextLength``). `freeText` (a timer's `event`,
    /// a dispatch's `note`) may hold no control character: `invalid_args`
    /// naming the argument and the code point
    /// (``TextLength/firstControlCharacter(in:)``).
    public func optionalString(_ key: String, length: ClosedRange<Int> = 0...Int.max, freeText: Bool = false) throws(ProtocolError) -> String? {
        guard let value = value(key) else { return nil }
        let rule = TextLength(characters: length)
        guard case .string(let text) = value else {
            throw ProtocolError(.invalidArgs, "argument '\(key)' must be a string\(rule.describedRule), got \(value.shortDescription)")
        }
        guard rule.allows(text) else {
            throw ProtocolError(.invalidArgs,
                "argument '\(key)' must be a string\(rule.describedRule), got \(TextLength.measure(text))")
        }
        if freeText, let found = TextLength.firstControlCharacter(in: text) {
            throw ProtocolError(.invalidArgs, "argument '\(key)' \(TextLength.controlProblem(found))")
        }
        return text
    }

    /// A required integer within `range`.
    public func int(_ key: String, in range: ClosedRange<Int>) throws(ProtocolError) -> Int {
        guard let number = try optionalInt(key, in: range) else {
            throw ProtocolError(.invalidArgs, "argument '\(key)' is required (an integer \(range.describedRange))")
        }
        return number
    }

    /// An optional integer within `range`. Every number whose text is an
    /// exact integer (`5`, `5.0`, `5e0`) reads as `.int`; a `.double` has a
    /// fraction or lies beyond 64 bits and is refused, never rounded.
    public func optionalInt(_ key: String, in range: ClosedRange<Int>) throws(ProtocolError) -> Int? {
        guard let value = value(key) else { return nil }
        let number: Int? = if case .int(let number) = value { Int(exactly: number) } else { nil }
        guard let number, range.contains(number) else {
            let hint = if case .double = value { " (a number with a fraction, or beyond 64 bits)" } else { "" }
            throw ProtocolError(.invalidArgs,
                "argument '\(key)' must be an integer \(range.describedRange), got \(value.shortDescription)\(hint)")
        }
        return number
    }

    /// A required time (``ISOTime``, read strictly); a malformed one is `invalid_time`.
    public func time(_ key: String) throws(ProtocolError) -> Date {
        guard let date = try optionalTime(key) else {
            throw ProtocolError(.invalidArgs, "argument '\(key)' is required (\(ISOTime.form))")
        }
        return date
    }

    /// An optional time (``ISOTime``, read strictly: no date or time of day
    /// is rolled over, the fraction is truncated to milliseconds); a
    /// malformed one is `invalid_time`, whose message names the argument,
    /// the value, what is wrong with it and the allowed form.
    public func optionalTime(_ key: String) throws(ProtocolError) -> Date? {
        guard let value = value(key) else { return nil }
        guard case .string(let text) = value else {
            throw ProtocolError(.invalidTime, "argument '\(key)' must be \(ISOTime.form), got \(value.shortDescription)")
        }
        switch ISOTime.read(text) {
        case .success(let milliseconds):
            return Date(timeIntervalSince1970: TimeInterval(milliseconds) / 1_000)
        case .failure(let error):
            throw ProtocolError(.invalidTime,
                "argument '\(key)' must be \(ISOTime.form), got \(value.shortDescription): \(error.reason)")
        }
    }
}

extension JSONValue {
    /// The value for an error message: strings quoted, long values cut.
    var shortDescription: String {
        switch self {
        case .string(let text): TextLength.quoted(text)
        case .int(let number): "\(number)"
        case .double(let number): "\(number)"
        case .bool(let flag): "\(flag)"
        case .null: "null"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

extension ClosedRange<Int> {
    var describedRange: String {
        if upperBound == Int.max { return "≥ \(lowerBound)" }
        return "\(lowerBound)…\(upperBound)"
    }
}

extension TextLength {
    /// ` of 0–100 characters and at most 400 bytes of UTF-8` (arguments
    /// name their range as PROTOCOL.md's tables do), or empty when unbounded.
    var describedRule: String {
        if characters == 0...Int.max { return "" }
        if characters.upperBound == Int.max { return " of at least \(characters.lowerBound) characters" }
        return " of \(characters.lowerBound)–\(characters.upperBound) characters and at most \(maxBytes) bytes of UTF-8"
    }
}
