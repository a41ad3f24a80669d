import Foundation
import OutaTimeProtocol

/// One frame from the server, decoded in a single pass of `JSONDecoder`
/// with every field any frame type has, all optional. Unknown fields are
/// skipped (PROTOCOL.md §1: later revisions add them).
///
/// An `ok: false` reply whose `error` lacks its object reads as `internal`.
struct IncomingFrame: Decodable {
    let type: String
    let id: RequestID?
    let ok: Bool?
    let result: JSONValue?
    let error: ServerError?
    let channel: String?
    let seq: Int64?
    let event: String?
    let data: JSONValue?
    let at: String?
    let from: Watcher?
    let joined: [Watcher]?
    let left: [Watcher]?
    let watcherCount: Int?
    let reason: String?

    private enum Keys: String, CodingKey {
        case type, id, ok, result, error, channel, seq, event, data, at, from, joined, left, reason
        case watcherCount = "watcher_count"
    }

    /// Only `type` must decode. A field of an unexpected shape reads as
    /// absent, so a push type of a later revision that reuses a name for
    /// something else is ignored instead of breaking the connection; a
    /// known type missing what it needs is reported by ``kind``.
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        func field<T: Decodable>(_ key: Keys) -> T? { try? container.decodeIfPresent(T.self, forKey: key) }
        type = try container.decode(String.self, forKey: .type)
        id = field(.id)
        ok = field(.ok)
        result = field(.result)
        error = field(.error)
        channel = field(.channel)
        seq = field(.seq)
        event = field(.event)
        data = field(.data)
        at = field(.at)
        from = field(.from)
        joined = field(.joined)
        left = field(.left)
        watcherCount = field(.watcherCount)
        reason = field(.reason)
    }

    /// Decodes a frame body; the bytes are read only during the call.
    static func decode(_ body: UnsafeRawBufferPointer, with decoder: JSONDecoder) throws -> IncomingFrame {
        guard let base = body.baseAddress, body.count > 0 else {
            return try decoder.decode(IncomingFrame.self, from: Data())
        }
        let data = Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: base), count: body.count, deallocator: .none)
        return try decoder.decode(IncomingFrame.self, from: data)
    }

    /// What the frame means to the connection.
    var kind: Kind {
        switch type {
        case "reply":
            guard let id, let ok else { return .malformed("a reply without 'id' or 'ok'") }
            if ok { return .reply(id, .success(result ?? .object([:]))) }
            let failure = error ?? ServerError(code: "internal", message: "failed reply without an error object")
            return .reply(id, .failure(failure))
        case "event":
            guard let channel, let seq, let event else { return .malformed("an event without channel, seq or event") }
            return .event(ChannelEvent(channel: channel, seq: seq, event: event,
                                       data: data ?? .object([:]), at: at ?? ""))
        case "tick":
            guard let channel else { return .malformed("a tick without channel") }
            return .tick(ChannelTick(channel: channel, data: data ?? .object([:])))
        case "message":
            guard let channel, let from else { return .malformed("a message without channel or from") }
            // A `null` data decodes as absent: it is the published value null.
            return .message(ChannelMessage(channel: channel, from: from, data: data ?? .null))
        case "presence":
            guard let channel else { return .malformed("a presence without channel") }
            return .presence(PresenceChange(channel: channel, joined: joined ?? [], left: left ?? [],
                                            watcherCount: watcherCount))
        case "error":
            return .errorPush(error ?? ServerError(code: "internal", message: "error push without an error object"))
        case "bye":
            return .bye(reason ?? "unknown")
        default:
            return .unknown
        }
    }

    /// The decoded meaning of a frame.
    enum Kind {
        case reply(RequestID, Result<JSONValue, ServerError>)
        case event(ChannelEvent)
        case tick(ChannelTick)
        case message(ChannelMessage)
        case presence(PresenceChange)
        case errorPush(ServerError)
        case bye(String)
        /// A push type this client does not know: ignored (§7).
        case unknown
        /// A known type missing a field it must have.
        case malformed(String)
    }
}

extension JSONValue {
    /// Decodes a `Decodable` from this value (a reply's `result`), through
    /// its JSON text: results are small and rare next to pushes.
    func decode<T: Decodable>(_ type: T.Type) throws(ClientError) -> T {
        if let same = self as? T { return same }
        do {
            let data = try JSONEncoder().encode(self)
            return try JSONDecoder().decode(T.self, from: data)
        } catch {
            throw .unexpectedReply("result is not a \(T.self): \(error)")
        }
    }
}
