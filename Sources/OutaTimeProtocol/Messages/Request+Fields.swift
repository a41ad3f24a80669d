/// Typed access to request fields. Every failure is `invalid_request` with a
/// message that names the field, what was given and what is allowed, e.g.
/// `field 'limit' must be an integer 1…1000, got 5000`. A field set to
/// `null` counts as absent.
extension Request {
    /// The raw value of `key`, `null` included; nil when absent. For fields
    /// that take any JSON, like `publish`'s `data`.
    public func value(_ key: String) -> JSONValue? {
        member(key)
    }

    /// A required string field.
    public func string(_ key: String) throws(ProtocolError) -> String {
        guard let text = try optionalString(key) else {
            throw ProtocolError(.invalidRequest, "field '\(key)' is required (a string)")
        }
        return text
    }

    /// An optional string field, when given at most `maxLength` characters
    /// and 4 × `maxLength` bytes of UTF-8 (``TextLength``). `freeText`
    /// fields (display names) may hold no control character
    /// (``TextLength/firstControlCharacter(in:)``) and no format character
    /// (``TextLength/firstFormatCharacter(in:)``), both `invalid_request`.
    public func optionalString(_ key: String, maxLength: Int? = nil, freeText: Bool = false) throws(ProtocolError) -> String? {
        guard let value = present(key) else { return nil }
        let length = maxLength.map { TextLength(max: $0) }
        let allowed = length.map { "a string \($0.rule)" } ?? "a string"
        guard case .string(let text) = value else {
            throw ProtocolError(.invalidRequest, "field '\(key)' must be \(allowed), got \(value.errorDescription)")
        }
        if let length, !length.allows(text) {
            throw ProtocolError(.invalidRequest, "field '\(key)' must be \(allowed), got one of \(TextLength.measure(text))")
        }
        if freeText, let found = TextLength.firstControlCharacter(in: text) {
            throw ProtocolError(.invalidRequest, "field '\(key)' \(TextLength.controlProblem(found))")
        }
        if freeText, let found = TextLength.firstFormatCharacter(in: text) {
            throw ProtocolError(.invalidRequest, "field '\(key)' \(TextLength.formatProblem(found))")
        }
        return text
    }

    /// An optional string field that must be one of `choices`; the error,
    /// for a string outside them or a value of another type, names them all.
    public func optionalChoice(_ key: String, among choices: [String]) throws(ProtocolError) -> String? {
        guard let value = present(key) else { return nil }
        guard case .string(let text) = value, choices.contains(text) else {
            throw ProtocolError(.invalidRequest,
                "field '\(key)' must be one of \(choices.joined(separator: ", ")), got \(value.errorDescription)")
        }
        return text
    }

    /// An optional boolean field (`true` or `false`); the error names the value given.
    public func optionalBool(_ key: String) throws(ProtocolError) -> Bool? {
        guard let value = present(key) else { return nil }
        guard case .bool(let flag) = value else {
            throw ProtocolError(.invalidRequest, "field '\(key)' must be true or false, got \(value.errorDescription)")
        }
        return flag
    }

    /// A required integer field within `range`.
    public func int(_ key: String, in range: ClosedRange<Int64>) throws(ProtocolError) -> Int64 {
        guard let number = try optionalInt(key, in: range) else {
            throw ProtocolError(.invalidRequest, "field '\(key)' is required (an integer \(range.text))")
        }
        return number
    }

    /// An optional integer field within `range` when given. The JSON reader
    /// makes every number whose text is an exact integer an `.int` (`5.0`
    /// and `5e0` too: some clients' encoders write every number as a
    /// double); a `.double` is a number with a fraction, or one beyond 64
    /// bits, and is refused rather than rounded (`1e-400` is not 0).
    public func optionalInt(_ key: String, in range: ClosedRange<Int64>) throws(ProtocolError) -> Int64? {
        guard let value = present(key) else { return nil }
        guard case .int(let number) = value, range.contains(number) else {
            let hint = if case .double = value { " (a number with a fraction, or beyond 64 bits)" } else { "" }
            throw ProtocolError(
                .invalidRequest,
                "field '\(key)' must be an integer \(range.text), got \(value.errorDescription)\(hint)"
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
        guard let value = member(key), value != .null else { return nil }
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
    public var errorDescription: String {
        switch self {
        case .null: "null"
        case .bool(let flag): "\(flag) (a boolean)"
        case .int(let number): "\(number)"
        case .double(let number): "\(number)"
        case .string(let text) where text.unicodeScalars.count <= 40: "'\(text)' (a string)"
        case .string(let text): "a string of \(TextLength.measure(text)) starting \(TextLength.quoted(text, limit: 20, measured: false))"
        case .array(let items): "an array of \(items.count) items"
        case .object: "an object"
        }
    }
}
