// Reading the server's pushes back (PROTOCOL.md §7), with the types the
// server encodes them with, so a client cannot drift from the server's
// shapes. Each decoder takes exactly what `encode(to:)` writes: the push's
// own `type`, every member the server always writes (a `null` where a
// value is required is refused), and `PresencePush`'s counts only when
// present. Unknown members are ignored (§1: later revisions add them).

extension ErrorPush: Decodable {
    /// Reads `{"type":"error","error":{"code":…,"message":…}}`.
    ///
    /// - Throws: `DecodingError` for another `type`, a missing `error`, or
    ///   a `code` that is not one of ``ErrorCode``'s.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try container.expectType(Self.wireType, forKey: .type)
        self.init(error: try container.decode(ProtocolError.self, forKey: .error))
    }
}

extension ByePush: Decodable {
    /// Reads `{"type":"bye","reason":…}`.
    ///
    /// - Throws: `DecodingError` for another `type`, or a `reason` that is
    ///   not one of ``ByeReason``'s.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try container.expectType(Self.wireType, forKey: .type)
        self.init(reason: try container.decode(ByeReason.self, forKey: .reason))
    }
}

extension MessagePush: Decodable {
    /// Reads `{"type":"message","channel":C,"from":{…},"data":…}`. `data`
    /// must be present; `null` is a published value like any other.
    ///
    /// - Throws: `DecodingError` for another `type` or a missing or
    ///   ill-typed member.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try container.expectType(Self.wireType, forKey: .type)
        self.init(channel: try container.decode(String.self, forKey: .channel),
                  from: try container.decode(Watcher.self, forKey: .from),
                  data: try container.decode(JSONValue.self, forKey: .data))
    }
}

extension DroppedPush: Decodable {
    /// Reads `{"type":"dropped","channel":C,"messages":N}`.
    ///
    /// - Throws: `DecodingError` for another `type` or a missing or
    ///   ill-typed member.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try container.expectType(Self.wireType, forKey: .type)
        self.init(channel: try container.decode(String.self, forKey: .channel),
                  messages: try container.decode(Int.self, forKey: .messages))
    }
}

extension PresencePush: Decodable {
    /// Reads `{"type":"presence","channel":C,"joined":[…],"left":[…]}`
    /// with `watcher_count`, `joined_count` and `left_count` when present.
    /// Both arrays are required: the server always writes them.
    ///
    /// - Throws: `DecodingError` for another `type` or a missing or
    ///   ill-typed member.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try container.expectType(Self.wireType, forKey: .type)
        self.init(channel: try container.decode(String.self, forKey: .channel),
                  joined: try container.decode([Watcher].self, forKey: .joined),
                  left: try container.decode([Watcher].self, forKey: .left),
                  watcherCount: try container.decodeIfPresent(Int.self, forKey: .watcherCount),
                  joinedCount: try container.decodeIfPresent(Int.self, forKey: .joinedCount),
                  leftCount: try container.decodeIfPresent(Int.self, forKey: .leftCount))
    }
}

extension EventMessage: Decodable where Data == JSONValue {
    /// Reads `{"type":"event","channel":C,"seq":S,"event":…,"data":{…},"at":…}`.
    /// `data` is the kind's payload as a ``JSONValue``.
    ///
    /// - Throws: `DecodingError` for another `type` or a missing or
    ///   ill-typed member.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try container.expectType(Self.wireType, forKey: .type)
        self.init(channel: try container.decode(String.self, forKey: .channel),
                  seq: try container.decode(Int64.self, forKey: .seq),
                  event: try container.decode(String.self, forKey: .event),
                  data: try container.decode(JSONValue.self, forKey: .data),
                  at: try container.decode(String.self, forKey: .at))
    }

    /// The push for one of `channel`'s events as `history` or a recovery
    /// returns it: the same event, told without its channel.
    public init(channel: String, history entry: HistoryEvent) {
        self.init(channel: channel, seq: entry.seq, event: entry.event, data: entry.data, at: entry.at)
    }
}

extension TickPush: Decodable where Data: Decodable {
    /// Reads `{"type":"tick","channel":C,"data":{…}}`. A client reads
    /// `TickPush<JSONValue>`: the typed payloads (such as a timer list's)
    /// are the server's.
    ///
    /// - Throws: `DecodingError` for another `type` or a missing or
    ///   ill-typed member.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try container.expectType(Self.wireType, forKey: .type)
        self.init(channel: try container.decode(String.self, forKey: .channel),
                  data: try container.decode(Data.self, forKey: .data))
    }
}

extension KeyedDecodingContainer {
    /// Reads the string at `key` and fails unless it is `expected`: a push
    /// decoded as the wrong type is refused, not half-read.
    func expectType(_ expected: String, forKey key: Key) throws {
        let found = try decode(String.self, forKey: key)
        guard found == expected else {
            throw DecodingError.dataCorruptedError(forKey: key, in: self,
                                                   debugDescription: "expected '\(expected)', found '\(found)'")
        }
    }
}
