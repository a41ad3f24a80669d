// The answer to a request that carried an `id` (§2). Every such request
// gets exactly one: `ReplyOK` or `ReplyError`.

/// A successful reply: `{"type":"reply","id":…,"ok":true,"result":{…}}`.
public struct ReplyOK<Result: Encodable>: Encodable {
    /// The request's id, echoed unchanged.
    public let id: RequestID
    /// The operation's result, e.g. ``SubscribeResult`` or ``EmptyResult``.
    public let result: Result

    /// Creates the reply to the request with `id`.
    public init(id: RequestID, result: Result) {
        self.id = id
        self.result = result
    }

    private enum CodingKeys: String, CodingKey {
        case type, id, ok, result
    }

    /// Writes the constant `type` and `ok` along with `id` and `result`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode("reply", forKey: .type)
        try container.encode(id, forKey: .id)
        try container.encode(true, forKey: .ok)
        try container.encode(result, forKey: .result)
    }
}

extension ReplyOK: Sendable where Result: Sendable {}

extension ReplyOK: JSONWritable {
    /// The fields of `encode(to:)`, written directly.
    public func writeFields(to fields: inout JSONFields) throws {
        fields.write("type", "reply")
        fields.write("id", id)
        fields.write("ok", true)
        try fields.write("result", result)
    }
}

/// The reply to a `command` that carried an `idempotency_key` (§6.9):
/// `{"type":"reply","id":…,"ok":true,"result":…,"seq":S}`, and
/// `"repeated":true` when it answers a repeat of a command applied before.
/// `seq` is the seq of the command's event. Unkeyed commands keep the plain
/// ``ReplyOK``.
public struct KeyedCommandReply: Encodable, Sendable {
    /// The request's id, echoed unchanged.
    public let id: RequestID
    /// The first command's result as JSON text; nil (written `null`) when
    /// it was too large to keep for repeats.
    public let result: RawJSON?
    /// The seq of the command's event.
    public let seq: Int64
    /// Whether this answers a repeat (nothing was applied this time).
    public let repeated: Bool

    /// Creates the reply to the request with `id`.
    public init(id: RequestID, result: RawJSON?, seq: Int64, repeated: Bool) {
        self.id = id
        self.result = result
        self.seq = seq
        self.repeated = repeated
    }

    private enum CodingKeys: String, CodingKey {
        case type, id, ok, result, seq, repeated
    }

    /// Writes `type`, `id`, `ok`, `result`, `seq`, and `repeated` only when true.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode("reply", forKey: .type)
        try container.encode(id, forKey: .id)
        try container.encode(true, forKey: .ok)
        if let result {
            try container.encode(result, forKey: .result)
        } else {
            try container.encodeNil(forKey: .result)
        }
        try container.encode(seq, forKey: .seq)
        if repeated { try container.encode(true, forKey: .repeated) }
    }
}

/// A failed reply:
/// `{"type":"reply","id":…,"ok":false,"error":{"code":…,"message":…}}`.
public struct ReplyError: Encodable, Sendable {
    /// The request's id, echoed unchanged.
    public let id: RequestID
    /// What went wrong.
    public let error: ProtocolError

    /// Creates the failure reply to the request with `id`.
    public init(id: RequestID, error: ProtocolError) {
        self.id = id
        self.error = error
    }

    private enum CodingKeys: String, CodingKey {
        case type, id, ok, error
    }

    /// Writes the constant `type` and `ok` along with `id` and `error`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode("reply", forKey: .type)
        try container.encode(id, forKey: .id)
        try container.encode(false, forKey: .ok)
        try container.encode(error, forKey: .error)
    }
}

/// The result of operations that return nothing, such as `unsubscribe`:
/// encodes as `{}`.
public struct EmptyResult: Codable, Sendable, Hashable {
    /// Creates the empty result.
    public init() {}

    /// Reads any object; unknown fields are ignored (§1).
    public init(from decoder: any Decoder) throws {
        _ = try decoder.container(keyedBy: NoKeys.self)
    }

    /// Writes an empty object.
    public func encode(to encoder: any Encoder) throws {
        _ = encoder.container(keyedBy: NoKeys.self)
    }

    private enum NoKeys: CodingKey {}
}
