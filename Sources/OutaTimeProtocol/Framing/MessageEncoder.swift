import Foundation

/// Turns outbound messages (replies, pushes) into JSON bodies and frames,
/// with ``CompactJSONEncoder`` (one pass, no intermediate tree; see there
/// why not Foundation's `JSONEncoder`). Compact JSON, `/` unescaped, so
/// channel names read `delorean/main`.
public struct MessageEncoder: Sendable {
    private let encoder = CompactJSONEncoder()

    /// Creates an encoder.
    public init() {}

    /// Encodes `message` as a JSON body, without a length header.
    ///
    /// - Throws: `EncodingError` if the message cannot be represented in
    ///   JSON (for example a `.double(.nan)` inside a `JSONValue`).
    public func body<T: Encodable>(_ message: T) throws -> Data {
        try encoder.withEncoded(message) { Data($0) }
    }

    /// Encodes `message` as JSON text (what the store keeps), without a
    /// `Data` or array in between.
    ///
    /// - Throws: `EncodingError` if the message cannot be represented in JSON.
    public func text<T: Encodable>(_ message: T) throws -> String {
        try encoder.withEncoded(message) { String(decoding: $0, as: UTF8.self) }
    }

    /// Encodes `message` into a ready-to-send frame (header plus body), to
    /// be shared by every connection it goes to.
    ///
    /// - Throws: `EncodingError` if the message cannot be represented in JSON.
    public func frame<T: Encodable>(_ message: T) throws -> Frame {
        try encoder.withEncoded(message) { Frame(body: $0) }
    }
}
