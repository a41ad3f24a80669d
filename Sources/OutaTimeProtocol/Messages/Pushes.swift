// Server pushes (PROTOCOL.md §7): messages the server sends without a
// request. Each writes its constant `type` (its `wireType`) itself. The
// server builds them once per change and fans the frame out; clients decode
// them with the same types (Pushes+Decodable.swift, ``ServerPush``).
// `wireType` is computed, a literal: no lazy global to check on the encode
// path.

/// Someone subscribed to a channel: `{"session": …, "name": …}`.
public struct Watcher: Codable, Sendable, Hashable {
    /// The watcher's session id, from its hello reply.
    public let session: String
    /// The operator display name given in `hello`.
    public let name: String

    /// Creates a watcher entry.
    public init(session: String, name: String) {
        self.session = session
        self.name = name
    }

    private enum CodingKeys: String, CodingKey {
        case session, name
    }
}

extension Watcher: JSONWritable {
    /// The fields of the synthesized `encode(to:)`, written directly (every
    /// `message` push carries its publisher).
    public func writeFields(to fields: inout JSONFields) throws {
        fields.write("session", session)
        fields.write("name", name)
    }
}

/// A failure not tied to a request id:
/// `{"type":"error","error":{"code":…,"message":…}}`.
public struct ErrorPush: Encodable, Sendable, Equatable {
    /// The push's `type` on the wire.
    public static var wireType: String { "error" }

    /// What went wrong.
    public let error: ProtocolError

    /// Creates the push for `error`.
    public init(error: ProtocolError) {
        self.error = error
    }

    enum CodingKeys: String, CodingKey {
        case type, error
    }

    /// Writes `type` `error` and the error object.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.wireType, forKey: .type)
        try container.encode(error, forKey: .error)
    }
}

/// Why the server is closing a connection, sent in ``ByePush``. Logged and
/// counted by the server too.
public enum ByeReason: String, Sendable, Codable, CaseIterable {
    /// The server is stopping.
    case serverShutdown = "server_shutdown"
    /// Nothing arrived for 2 × `heartbeat_ms`.
    case idleTimeout = "idle_timeout"
    /// `hello` did not complete within 10 s.
    case helloTimeout = "hello_timeout"
    /// The client read too slowly and its output buffer overflowed.
    case slowConsumer = "slow_consumer"
    /// A framing error: the stream is out of sync.
    case protocolError = "protocol_error"
    /// `hello` asked for a protocol version other than 1.
    case unsupportedProtocol = "unsupported_protocol"
    /// Tokens are configured and `hello` carried no valid one.
    case unauthorized
    /// The server holds its maximum of connections, in all or from the
    /// client's address; sent (after an `error` `server_busy` naming the
    /// limit) on the refused connection at once. Retry later.
    case serverBusy = "server_busy"
    /// A newer connection sent `hello` with this connection's `resume_key`
    /// (§6.1): this one is replaced by it. Not retryable: reconnecting
    /// would replace the newer connection in turn.
    case replaced
}

/// The last message before the server closes: `{"type":"bye","reason":…}`.
public struct ByePush: Encodable, Sendable, Hashable {
    /// The push's `type` on the wire.
    public static var wireType: String { "bye" }

    /// Why the connection is closed.
    public let reason: ByeReason

    /// Creates the push for `reason`.
    public init(reason: ByeReason) {
        self.reason = reason
    }

    enum CodingKeys: String, CodingKey {
        case type, reason
    }

    /// Writes `type` `bye` and the reason.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.wireType, forKey: .type)
        try container.encode(reason, forKey: .reason)
    }
}

/// A `publish` delivered to a subscriber:
/// `{"type":"message","channel":C,"from":{…},"data":…}`.
///
/// Written directly (``JSONWritable``): a publish is encoded once for all
/// its subscribers, but that once was, through `Codable`, about 10,000
/// instructions of the 28,000 a publish to 10 subscribers cost under
/// callgrind (issue 28).
public struct MessagePush: Encodable, Sendable, Hashable, JSONWritable {
    /// The push's `type` on the wire.
    public static var wireType: String { "message" }

    /// The channel, in its `kind/name` form.
    public let channel: String
    /// The publisher.
    public let from: Watcher
    /// The published JSON, as given.
    public let data: JSONValue

    /// Creates the push.
    public init(channel: String, from: Watcher, data: JSONValue) {
        self.channel = channel
        self.from = from
        self.data = data
    }

    enum CodingKeys: String, CodingKey {
        case type, channel, from, data
    }

    /// Writes `type` `message` and the fields.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.wireType, forKey: .type)
        try container.encode(channel, forKey: .channel)
        try container.encode(from, forKey: .from)
        try container.encode(data, forKey: .data)
    }

    /// The fields of `encode(to:)`, written directly: the constant parts
    /// as one run of bytes each, without a member's container bookkeeping
    /// (one push is encoded per `publish`: issue 28).
    public func writeFields(to fields: inout JSONFields) throws {
        try fields.writeMessageMembers(channel: channel, from: from, data: data)
    }
}

/// `message` pushes of a channel the server dropped for this connection
/// because its output was backed up (protocol §7, §12):
/// `{"type":"dropped","channel":C,"messages":N}`. Sent when the output has
/// drained, before any later `message` of the channel.
public struct DroppedPush: Encodable, Sendable, Hashable {
    /// The push's `type` on the wire.
    public static var wireType: String { "dropped" }

    /// The channel, in its `kind/name` form.
    public let channel: String
    /// How many `message` pushes were dropped since the last `dropped` push.
    public let messages: Int

    /// Creates the push.
    public init(channel: String, messages: Int) {
        self.channel = channel
        self.messages = messages
    }

    enum CodingKeys: String, CodingKey {
        case type, channel, messages
    }

    /// Writes `type` `dropped` and the fields.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.wireType, forKey: .type)
        try container.encode(channel, forKey: .channel)
        try container.encode(messages, forKey: .messages)
    }
}

/// Watchers of a channel changed:
/// `{"type":"presence","channel":C,"joined":[…],"left":[…]}`. Both arrays
/// are always present, possibly empty, so clients need no nil checks.
public struct PresencePush: Encodable, Sendable, Hashable {
    /// The push's `type` on the wire.
    public static var wireType: String { "presence" }

    /// The channel, in its `kind/name` form.
    public let channel: String
    /// Watchers that subscribed.
    public let joined: [Watcher]
    /// Watchers that unsubscribed or disconnected.
    public let left: [Watcher]
    /// How many watchers the channel has after the change (an addition to
    /// the contract; see PROTOCOL.md "Crowded channels").
    public let watcherCount: Int?
    /// Set only when `joined` was cut short (a crowded channel's summary):
    /// how many joined in all.
    public let joinedCount: Int?
    /// Set only when `left` was cut short: how many left in all.
    public let leftCount: Int?

    /// Creates the push.
    public init(channel: String, joined: [Watcher] = [], left: [Watcher] = [],
                watcherCount: Int? = nil, joinedCount: Int? = nil, leftCount: Int? = nil) {
        self.channel = channel
        self.joined = joined
        self.left = left
        self.watcherCount = watcherCount
        self.joinedCount = joinedCount
        self.leftCount = leftCount
    }

    enum CodingKeys: String, CodingKey {
        case type, channel, joined, left
        case watcherCount = "watcher_count"
        case joinedCount = "joined_count"
        case leftCount = "left_count"
    }

    /// Writes `type` `presence`, both arrays and the counts that are set.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.wireType, forKey: .type)
        try container.encode(channel, forKey: .channel)
        try container.encode(joined, forKey: .joined)
        try container.encode(left, forKey: .left)
        try container.encodeIfPresent(watcherCount, forKey: .watcherCount)
        try container.encodeIfPresent(joinedCount, forKey: .joinedCount)
        try container.encodeIfPresent(leftCount, forKey: .leftCount)
    }
}

/// A committed durable change:
/// `{"type":"event","channel":C,"seq":S,"event":…,"data":{…},"at":…}`.
///
/// Clients read it as ``EventPush`` (`data` a ``JSONValue``); the server
/// sends `EventMessage<RawJSON>`, the event's data as encoded once when the
/// event was made (the same text the store keeps).
public struct EventMessage<Data: Encodable & Sendable>: Encodable, Sendable, JSONWritable {
    /// The push's `type` on the wire.
    public static var wireType: String { "event" }

    /// The channel, in its `kind/name` form.
    public let channel: String
    /// The channel's seq after this event.
    public let seq: Int64
    /// The event name, e.g. `departed`.
    public let event: String
    /// The event's payload.
    public let data: Data
    /// When it happened, ISO 8601 UTC (see ``ISOTime``).
    public let at: String

    /// Creates the push.
    public init(channel: String, seq: Int64, event: String, data: Data, at: String) {
        self.channel = channel
        self.seq = seq
        self.event = event
        self.data = data
        self.at = at
    }

    enum CodingKeys: String, CodingKey {
        case type, channel, seq, event, data, at
    }

    /// Writes `type` `event` and the fields.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.wireType, forKey: .type)
        try container.encode(channel, forKey: .channel)
        try container.encode(seq, forKey: .seq)
        try container.encode(event, forKey: .event)
        try container.encode(data, forKey: .data)
        try container.encode(at, forKey: .at)
    }

    /// The fields of `encode(to:)`, written directly.
    public func writeFields(to fields: inout JSONFields) throws {
        fields.write("type", Self.wireType)
        fields.write("channel", channel)
        fields.write("seq", seq)
        fields.write("event", event)
        try fields.write("data", data)
        fields.write("at", at)
    }
}

extension EventMessage: Equatable where Data: Equatable {}

extension EventMessage: Hashable where Data: Hashable {}

/// An `event` push as clients read it: `data` is the kind's payload as a
/// ``JSONValue``.
public typealias EventPush = EventMessage<JSONValue>

/// Ephemeral progress, never stored and without seq:
/// `{"type":"tick","channel":C,"data":{…}}`.
///
/// `Data` is usually `JSONValue`; a typed value (a timer list's tick of
/// many countdowns) encodes several times faster than the same JSON as a
/// `JSONValue` tree.
public struct TickPush<Data: Encodable & Sendable>: Encodable, Sendable, JSONWritable {
    /// The push's `type` on the wire.
    public static var wireType: String { "tick" }

    /// The channel, in its `kind/name` form.
    public let channel: String
    /// The progress values (speed, remaining time, lap time…).
    public let data: Data

    /// Creates the push.
    public init(channel: String, data: Data) {
        self.channel = channel
        self.data = data
    }

    enum CodingKeys: String, CodingKey {
        case type, channel, data
    }

    /// Writes `type` `tick` and the fields.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.wireType, forKey: .type)
        try container.encode(channel, forKey: .channel)
        try container.encode(data, forKey: .data)
    }

    /// The fields of `encode(to:)`, written directly.
    public func writeFields(to fields: inout JSONFields) throws {
        fields.write("type", Self.wireType)
        fields.write("channel", channel)
        try fields.write("data", data)
    }
}

extension TickPush: Equatable where Data: Equatable {}

extension TickPush: Hashable where Data: Hashable {}
