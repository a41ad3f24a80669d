/// Typed access to request fields. Every failure is `invalid_request` with a
/// message that names the field, what was given and what is allowed, e.g.
/// `field 'limit' must be an integer 1…1000, got 5000`. A field set to
/// `null` counts as absent.
extension Request {
    /// The raw value of `key`, `null` included; nil when absent. For fields
    /// that take any JSON, like `publish`'s `data`.
    public func value(_ key: String) -> JSONValue? {
        fields[key]
    }

    /// A required string field.
    public func string(_ key: String) throws(ProtocolError) -> String {
        guard let text = try optionalString(key) else {
            throw ProtocolError(.invalidRequest, "field '\(key)' is required (a string)")
        }
        return text
    }

    /// An optional string field, at most `maxLength` characters when given.
    public func optionalString(_ key: String, maxLength: Int? = nil) throws(ProtocolError) -> String? {
        guard let value = present(key) else { return nil }
        let allowed = maxLength.map { "a string of at most \($0) characters" } ?? "a string"
        guard case .string(let text) = value else {
            throw ProtocolError(.invalidRequest, "field '\(key)' must be \(allowed), got \(value.errorDescription)")
        }
        if let maxLength, text.count > maxLength {
            throw ProtocolError(.invalidRequest, "field '\(key)' must be \(allowed), got one of \(text.count) characters")
        }
        return text
    }

    /// A required integer field within `range`.
    public func int(_ key: String, in range: ClosedRange<Int64>) throws(ProtocolError) -> Int64 {
        guard let number = try optionalInt(key, in: range) else {
            throw ProtocolError(.invalidRequest, "field '\(key)' is required (an integer \(range.text))")
        }
        return number
    }

    /// An optional integer field within `range` when given. A JSON number
    /// with an integral value such as `5.0` is accepted: some clients'
    /// encoders write every number as a double.
    public func optionalInt(_ key: String, in range: ClosedRange<Int64>) throws(ProtocolError) -> Int64? {
        guard let value = present(key) else { return nil }
        let number: Int64? = switch value {
        case .int(let number): number
        case .double(let number): Int64(exactly: number)
        default: nil
        }
        guard let number, range.contains(number) else {
            throw ProtocolError(
                .invalidRequest,
                "field '\(key)' must be an integer \(range.text), got \(value.errorDescription)"
            )
        }
        return number
    }

    /// An optional object field, such as `command`'s `args`.
    public func optionalObject(_ key: String) throws(ProtocolError) -> [String: JSONValue]? {
        guard let value = present(key) else { return nil }
        guard case .object(let object) = value else {
            throw ProtocolError(.invalidRequest, "field '\(key)' must be an object, got \(value.errorDescription)")
        }
        return object
    }

    /// A required channel name field, parsed and validated.
    ///
    /// - Throws: `invalid_request` when the field is missing or not a
    ///   string; `invalid_channel` or `unknown_kind` from
    ///   ``ChannelName/parse(_:)``.
    public func channel(_ key: String = "channel") throws(ProtocolError) -> ChannelName {
        guard let value = present(key) else {
            throw ProtocolError(.invalidRequest, "field '\(key)' is required (a string like 'delorean/main')")
        }
        guard case .string(let text) = value else {
            throw ProtocolError(
                .invalidRequest,
                "field '\(key)' must be a string like 'delorean/main', got \(value.errorDescription)"
            )
        }
        return try ChannelName.parse(text)
    }

    /// The field's value, or nil when it is absent or `null`.
    private func present(_ key: String) -> JSONValue? {
        guard let value = fields[key], value != .null else { return nil }
        return value
    }
}

extension ClosedRange<Int64> {
    /// `1…1000`, as the contract writes ranges.
    var text: String { "\(lowerBound)…\(upperBound)" }
}

extension JSONValue {
    /// The value as an error message shows it after "got": numbers and
    /// booleans as written, strings quoted (shortened), containers by type.
    var errorDescription: String {
        switch self {
        case .null: "null"
        case .bool(let flag): "\(flag) (a boolean)"
        case .int(let number): "\(number)"
        case .double(let number): "\(number)"
        case .string(let text) where text.count <= 40: "'\(text)' (a string)"
        case .string(let text): "a string of \(text.count) characters starting '\(text.prefix(20))…'"
        case .array(let items): "an array of \(items.count) items"
        case .object: "an object"
        }
    }
}
