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

/// A ``MessageEncoder`` for one thread that keeps its JSON writer and output
/// buffer from one message to the next, where ``MessageEncoder`` allocates
/// them for each (about a quarter of the cost of encoding a command's reply
/// under callgrind). The server's event loop encodes every reply and push
/// with one of these. Not `Sendable`: one thread only.
public final class ReusableMessageEncoder {
    private let writer = JSONByteWriter()
    private var inUse = false

    /// Creates an encoder.
    public init() {}

    /// Encodes `message` into a ready-to-send frame, as
    /// ``MessageEncoder/frame(_:)`` does.
    ///
    /// - Throws: `EncodingError` if the message cannot be represented in JSON.
    public func frame<T: Encodable>(_ message: T) throws -> Frame {
        // A message whose encoding asked for another frame (none does) gets
        // a writer of its own rather than the one in use.
        guard !inUse else { return try MessageEncoder().frame(message) }
        inUse = true
        defer { inUse = false }
        writer.reset()
        try writer.encodeTopLevel(message)
        return writer.withBytes { Frame(body: $0) }
    }

    /// Encodes a message that writes its own fields into a ready-to-send
    /// frame, as ``frame(_:)`` does but without its generic path: no
    /// dynamic cast to find the fields (the server's broadcasts: a
    /// `message` push, a tick).
    ///
    /// - Throws: `EncodingError` if the message cannot be represented in JSON.
    public func frame(writing message: some JSONWritable) throws -> Frame {
        let writer = inUse ? JSONByteWriter() : self.writer
        let reused = !inUse
        inUse = true
        defer { if reused { inUse = false } }
        writer.reset()
        try writer.writeTopLevel(message)
        return writer.withBytes { Frame(body: $0) }
    }

    /// Encodes the success reply `{"type":"reply","id":…,"ok":true,"result":{…}}`
    /// for a result that writes its own fields, as ``frame(_:)`` encodes
    /// ``ReplyOK`` but without its generic path: the result's type is known
    /// from its witness table, with no dynamic cast.
    ///
    /// - Throws: `EncodingError` if the result cannot be represented in JSON.
    public func replyFrame(id: RequestID, result: some JSONWritable) throws -> Frame {
        let writer = inUse ? JSONByteWriter() : self.writer
        let reused = !inUse
        inUse = true
        defer { if reused { inUse = false } }
        writer.reset()
        try writer.writeReply(id: id, result: result)
        return writer.withBytes { Frame(body: $0) }
    }
}
