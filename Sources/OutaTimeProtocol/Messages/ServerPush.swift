/// Any push the server sends (PROTOCOL.md §7), read by its `type` with the
/// push types the server encodes it with.
///
/// A `type` this revision does not know is ``unknown(type:)``: clients must
/// ignore it (§1, §7). A known type that lacks a member or carries one of
/// the wrong shape is refused with a `DecodingError` naming the member
/// (``Swift/DecodingError/summary`` puts it in one line).
public enum ServerPush: Sendable, Equatable {
    /// A committed durable change.
    case event(EventPush)
    /// Ephemeral progress, its `data` as a ``JSONValue``.
    case tick(TickPush<JSONValue>)
    /// A `publish`ed message.
    case message(MessagePush)
    /// `message` pushes of a channel dropped while the connection's output
    /// was backed up, with their count.
    case dropped(DroppedPush)
    /// Watchers came or went.
    case presence(PresencePush)
    /// A failure not tied to a request id.
    case error(ErrorPush)
    /// The server is closing the connection; always the last frame.
    case bye(ByePush)
    /// A push type of a later revision, to be ignored.
    case unknown(type: String)

    /// The push's `type` on the wire.
    public var type: String {
        switch self {
        case .event: EventPush.wireType
        case .tick: TickPush<JSONValue>.wireType
        case .message: MessagePush.wireType
        case .dropped: DroppedPush.wireType
        case .presence: PresencePush.wireType
        case .error: ErrorPush.wireType
        case .bye: ByePush.wireType
        case .unknown(let type): type
        }
    }
}

extension ServerPush: Decodable {
    /// Reads `type`, then the whole frame as that push.
    ///
    /// - Throws: `DecodingError` when `type` is missing or not a string,
    ///   when it is `reply` (a reply is not a push: read replies first), or
    ///   when a known push is malformed.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: TypeKey.self)
        let type = try container.decode(String.self, forKey: .type)
        switch type {
        case EventPush.wireType: self = .event(try EventPush(from: decoder))
        case TickPush<JSONValue>.wireType: self = .tick(try TickPush(from: decoder))
        case MessagePush.wireType: self = .message(try MessagePush(from: decoder))
        case DroppedPush.wireType: self = .dropped(try DroppedPush(from: decoder))
        case PresencePush.wireType: self = .presence(try PresencePush(from: decoder))
        case ErrorPush.wireType: self = .error(try ErrorPush(from: decoder))
        case ByePush.wireType: self = .bye(try ByePush(from: decoder))
        case "reply":
            throw DecodingError.dataCorruptedError(forKey: .type, in: container,
                                                   debugDescription: "a reply is not a push")
        default: self = .unknown(type: type)
        }
    }

    private enum TypeKey: String, CodingKey {
        case type
    }
}
