import Foundation

/// Turns outbound messages (replies, pushes) into JSON bodies and frames.
///
/// Wraps one `JSONEncoder` that is configured once and reused, because
/// creating an encoder per message is measurable on the broadcast path.
/// `JSONEncoder` is a class with mutable configuration and is not
/// `Sendable`, so neither is this type: keep one per thread (the event loop
/// has its own).
public struct MessageEncoder {
    private let encoder: JSONEncoder

    /// Creates an encoder that writes compact JSON and leaves `/` unescaped,
    /// so channel names read `delorean/main`, not `delorean\/main`.
    public init() {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        self.encoder = encoder
    }

    /// Encodes `message` as a JSON body, without a length header.
    ///
    /// - Throws: `EncodingError` if the message cannot be represented in
    ///   JSON (for example a `.double(.nan)` inside a `JSONValue`).
    public func body<T: Encodable>(_ message: T) throws -> Data {
        try encoder.encode(message)
    }

    /// Encodes `message` into a ready-to-send frame (header plus body), to
    /// be shared by every connection it goes to.
    ///
    /// - Throws: `EncodingError` if the message cannot be represented in JSON.
    public func frame<T: Encodable>(_ message: T) throws -> Frame {
        let data = try encoder.encode(message)
        return data.withUnsafeBytes { Frame(body: $0) }
    }
}
