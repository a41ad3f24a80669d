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

    /// A required string whose length (in characters) is within `length`.
    public func string(_ key: String, length: ClosedRange<Int> = 0...Int.max) throws(ProtocolError) -> String {
        guard let text = try optionalString(key, length: length) else {
            throw ProtocolError(.invalidArgs, "argument '\(key)' is required (a string\(length.describedLength))")
        }
        return text
    }

    /// An optional string whose length (in characters) is within `length`.
    public func optionalString(_ key: String, length: ClosedRange<Int> = 0...Int.max) throws(ProtocolError) -> String? {
        guard let value = value(key) else { return nil }
        guard case .string(let text) = value else {
            throw ProtocolError(.invalidArgs, "argument '\(key)' must be a string\(length.describedLength), got \(value.shortDescription)")
        }
        guard length.contains(text.count) else {
            throw ProtocolError(.invalidArgs, "argument '\(key)' must be\(length.describedLength), got \(text.count) characters")
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

    /// An optional integer within `range` (an integral `5.0` is accepted).
    public func optionalInt(_ key: String, in range: ClosedRange<Int>) throws(ProtocolError) -> Int? {
        guard let value = value(key) else { return nil }
        let number: Int? = switch value {
        case .int(let number): Int(exactly: number)
        case .double(let number): Int(exactly: number)
        default: nil
        }
        guard let number, range.contains(number) else {
            throw ProtocolError(.invalidArgs, "argument '\(key)' must be an integer \(range.describedRange), got \(value.shortDescription)")
        }
        return number
    }

    /// A required ISO 8601 time; a malformed one is `invalid_time`.
    public func time(_ key: String) throws(ProtocolError) -> Date {
        guard let date = try optionalTime(key) else {
            throw ProtocolError(.invalidArgs, "argument '\(key)' is required (an ISO 8601 time such as 1985-10-26T01:21:00Z)")
        }
        return date
    }

    /// An optional ISO 8601 time; a malformed one is `invalid_time`.
    public func optionalTime(_ key: String) throws(ProtocolError) -> Date? {
        guard let value = value(key) else { return nil }
        guard case .string(let text) = value, let date = ISOTime.parse(text) else {
            throw ProtocolError(.invalidTime,
                "argument '\(key)' must be an ISO 8601 time with a zone such as 1985-10-26T01:21:00Z, got \(value.shortDescription)")
        }
        return date
    }
}

extension JSONValue {
    /// The value for an error message: strings quoted, long values cut.
    var shortDescription: String {
        switch self {
        case .string(let text): "'\(text.count > 40 ? String(text.prefix(40)) + "…" : text)'"
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

    var describedLength: String {
        if self == 0...Int.max { return "" }
        if upperBound == Int.max { return " of at least \(lowerBound) characters" }
        return " of \(lowerBound)–\(upperBound) characters"
    }
}
