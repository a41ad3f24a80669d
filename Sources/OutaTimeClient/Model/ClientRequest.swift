import OutaTimeProtocol

/// A request with the type of its reply's `result`, so that
/// ``OutaTimeConnection/send(_:completion:)`` and ``BlockingClient/send(_:)``
/// hand back decoded values: `try client.send(.get("delorean/main")).state`.
///
/// `subscribe` is not here: subscriptions go through
/// ``OutaTimeConnection/subscribe(_:completion:)``, which keeps a mirror and
/// restores it after a reconnect.
public struct ClientRequest<Result: Decodable>: Sendable {
    /// The operation, e.g. `get`.
    public let type: String
    /// The fields besides `type` and `id`.
    public let fields: [String: JSONValue]

    /// A request of any type; see the typed constructors below first.
    public init(type: String, fields: [String: JSONValue] = [:]) {
        self.type = type
        self.fields = fields
    }
}

extension ClientRequest where Result == PingResult {
    /// `ping`: the server's clock.
    public static var ping: ClientRequest<PingResult> { .init(type: "ping") }
}

extension ClientRequest where Result == GetResult {
    /// `get`: a channel's state once, without subscribing (creates the channel).
    public static func get(_ channel: String) -> ClientRequest<GetResult> {
        .init(type: "get", fields: ["channel": .string(channel)])
    }
}

extension ClientRequest where Result == ListResult {
    /// `list`: the channels, optionally only those of `kind`.
    public static func list(kind: ChannelKind? = nil) -> ClientRequest<ListResult> {
        .init(type: "list", fields: kind.map { ["kind": .string($0.rawValue)] } ?? [:])
    }
}

extension ClientRequest where Result == HistoryResult {
    /// `history`: stored events with seq above `after`, at most `limit` (1…1000).
    public static func history(_ channel: String, after: Int64? = nil, limit: Int? = nil) -> ClientRequest<HistoryResult> {
        var fields: [String: JSONValue] = ["channel": .string(channel)]
        if let after { fields["after"] = .int(after) }
        if let limit { fields["limit"] = .int(Int64(limit)) }
        return .init(type: "history", fields: fields)
    }
}

extension ClientRequest where Result == PublishResult {
    /// `publish`: `data` to every subscriber of `channel`.
    public static func publish(_ channel: String, data: JSONValue) -> ClientRequest<PublishResult> {
        .init(type: "publish", fields: ["channel": .string(channel), "data": data])
    }
}

extension ClientRequest where Result == EmptyResult {
    /// `unsubscribe` on the wire; prefer ``OutaTimeConnection/unsubscribe(_:completion:)``,
    /// which also drops the mirror.
    public static func unsubscribe(_ channel: String) -> ClientRequest<EmptyResult> {
        .init(type: "unsubscribe", fields: ["channel": .string(channel)])
    }
}

extension ClientRequest where Result == JSONValue {
    /// `command`: runs `action` on `channel`; the result is action-specific
    /// (a DeLorean's new state, a dispatch, a timer…).
    public static func command(_ channel: String, action: String, args: [String: JSONValue] = [:]) -> ClientRequest<JSONValue> {
        .init(type: "command", fields: ["channel": .string(channel), "action": .string(action), "args": .object(args)])
    }

    /// `stats`: the server's counters, as an object.
    public static var stats: ClientRequest<JSONValue> { .init(type: "stats") }
}
