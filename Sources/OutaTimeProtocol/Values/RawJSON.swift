import Foundation

/// JSON text encoded once and then carried as it is: an event's data is
/// encoded when the domain creates the event, and the same text goes into
/// the store and into every `event` push (``EventMessage``), never through a
/// ``JSONValue`` tree and never encoded twice.
///
/// ``CompactJSONEncoder`` writes the text verbatim. Any other encoder
/// (Foundation's, in tests and tools) gets the parsed value, so the output
/// is the same JSON either way.
public struct RawJSON: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Compact JSON text.
    public let text: String

    /// Encodes `value` once, as the wire and the store carry it.
    ///
    /// - Throws: `EncodingError` if `value` cannot be represented in JSON
    ///   (a NaN or infinite number).
    public init<Value: Encodable>(encoding value: Value) throws {
        text = try MessageEncoder().text(value)
    }

    /// Writes `object` once (an event's payload): its fields straight into
    /// the text, without looking up how to encode it.
    ///
    /// - Throws: `EncodingError` for a NaN or infinite number.
    public init<Object: JSONWritable>(writing object: Object) throws {
        let writer = JSONByteWriter.borrow()
        defer { JSONByteWriter.giveBack(writer) }
        try writer.writeTopLevel(object)
        text = writer.withBytes { String(decoding: $0, as: UTF8.self) }
    }

    /// Text that is already valid JSON: written by this type before (read
    /// back from the store). Not checked; an invalid text would reach
    /// clients as it is.
    public init(validJSON text: String) {
        self.text = text
    }

    /// The value the text holds.
    ///
    /// - Throws: ``JSONReadError`` if the text is not JSON (it always is
    ///   when built by ``init(encoding:)``).
    public func value() throws(JSONReadError) -> JSONValue {
        try JSONValue.parse(Data(text.utf8))
    }

    /// The value, for encoders other than ``CompactJSONEncoder``.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(try value())
    }

    /// Reads any JSON value and keeps it as compact text.
    public init(from decoder: any Decoder) throws {
        let value = try JSONValue(from: decoder)
        try self.init(encoding: value)
    }

    public var description: String { text }
}
