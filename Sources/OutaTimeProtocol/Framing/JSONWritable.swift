/// A JSON object type that writes its fields straight into
/// ``CompactJSONEncoder``'s output.
///
/// `Codable` costs, per object, a container box allocation and generic
/// metadata lookups, and per field a call through the box: for the
/// messages sent with every command (the reply to a lap command, an event
/// push, a timer list's tick) that was most of the encoding time
/// (docs/BENCHMARKS.md). A conforming type keeps its `Encodable`
/// conformance — Foundation and every other encoder use it — and writes
/// the same fields in the same order here. The tests encode each
/// conforming type both ways and compare the bytes.
public protocol JSONWritable: Encodable {
    /// Writes every field, as `encode(to:)` does.
    func writeFields(to fields: inout JSONFields) throws
}

/// The fields of one object being written by a ``JSONWritable``. Keys are
/// static strings written as they are: they must need no JSON escaping
/// (plain ASCII names such as `lap_number`).
public struct JSONFields {
    let writer: JSONByteWriter
    let depth: Int

    /// `"key":"value"`.
    public mutating func write(_ key: StaticString, _ value: String) {
        writer.beginMember(static: key, depth: depth)
        writer.writeString(value)
    }

    /// `"key":123`.
    public mutating func write(_ key: StaticString, _ value: Int) {
        writer.beginMember(static: key, depth: depth)
        writer.writeInteger(value)
    }

    /// `"key":123`.
    public mutating func write(_ key: StaticString, _ value: Int64) {
        writer.beginMember(static: key, depth: depth)
        writer.writeInteger(value)
    }

    /// `"key":true`.
    public mutating func write(_ key: StaticString, _ value: Bool) {
        writer.beginMember(static: key, depth: depth)
        writer.writeBool(value)
    }

    /// `"key":123` or `"key":"text"`: a request's id as the client gave it.
    public mutating func write(_ key: StaticString, _ value: RequestID) {
        writer.beginMember(static: key, depth: depth)
        switch value {
        case .int(let number): writer.writeInteger(number)
        case .string(let text): writer.writeString(text)
        }
    }

    /// `"key":"value"` or `"key":null`.
    public mutating func write(_ key: StaticString, _ value: String?) {
        writer.beginMember(static: key, depth: depth)
        if let value { writer.writeString(value) } else { writer.writeNull() }
    }

    /// `"key":123` or `"key":null`.
    public mutating func write(_ key: StaticString, _ value: Int?) {
        writer.beginMember(static: key, depth: depth)
        if let value { writer.writeInteger(value) } else { writer.writeNull() }
    }

    /// `"key":` and any encodable value (a nested ``JSONWritable``, an
    /// array, a `JSONValue`, a `Codable` type).
    public mutating func write<T: Encodable>(_ key: StaticString, _ value: T) throws {
        writer.beginMember(static: key, depth: depth)
        try writer.encodeValue(value, depth: depth + 1)
    }

    /// `"key":{…}` for a nested ``JSONWritable`` object: its fields written
    /// directly, without the dynamic cast the `Encodable` overload needs
    /// to find them.
    public mutating func write<T: JSONWritable>(_ key: StaticString, _ value: T) throws {
        writer.beginMember(static: key, depth: depth)
        writer.openContainer(isObject: true, depth: depth + 1)
        var fields = JSONFields(writer: writer, depth: depth + 1)
        try value.writeFields(to: &fields)
    }

    /// `"key":value` when `value` is not nil; nothing otherwise (like
    /// `encodeIfPresent`).
    public mutating func writeIfPresent<T: Encodable>(_ key: StaticString, _ value: T?) throws {
        guard let value else { return }
        try write(key, value)
    }

    /// A ``MessagePush``'s members,
    /// `"type":"message","channel":…,"from":{"session":…,"name":…},"data":…`,
    /// the same bytes as writing them one by one (`MessagePushEncodingTests`
    /// compares them with the `Codable` form), but the constant parts in one
    /// append each and no container opened for `from`: the fan-out path
    /// writes one such push per `publish`, and the member bookkeeping was a
    /// third of it (callgrind, issue 28).
    mutating func writeMessageMembers(channel: String, from: Watcher, data: JSONValue) throws {
        writer.beginRawMembers(count: 4, depth: depth)
        writer.writeRaw("\"type\":\"message\",\"channel\":")
        writer.writeString(channel)
        writer.writeRaw(",\"from\":{\"session\":")
        writer.writeString(from.session)
        writer.writeRaw(",\"name\":")
        writer.writeString(from.name)
        writer.writeRaw("},\"data\":")
        if case .string(let text) = data {
            writer.writeString(text)
        } else {
            try writer.writeJSON(data)
        }
    }

    /// `"key":[…]` for an array of ``JSONWritable`` objects, without the
    /// array's `Codable` path.
    public mutating func write<T: JSONWritable>(_ key: StaticString, _ values: [T]) throws {
        writer.beginMember(static: key, depth: depth)
        writer.openContainer(isObject: false, depth: depth + 1)
        for value in values {
            writer.beginElement(depth: depth + 1)
            writer.openContainer(isObject: true, depth: depth + 2)
            var fields = JSONFields(writer: writer, depth: depth + 2)
            try value.writeFields(to: &fields)
        }
    }
}

/// A ``JSONWritable`` whose fields are its only definition: its `Encodable`
/// form (for Foundation's encoder and other non-compact encoders) is the
/// JSON its ``JSONWritable/writeFields(to:)`` writes, so the two cannot
/// drift apart. Event payloads are such types: the server only ever writes
/// them through ``CompactJSONEncoder``.
public protocol JSONPayload: JSONWritable, Sendable {}

extension JSONPayload {
    /// The value ``writeFields(to:)`` writes, through `JSONValue`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(try RawJSON(encoding: self).value())
    }
}
