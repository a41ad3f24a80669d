// The `result` objects of successful replies (§3), one per operation.
// `Codable` so that clients decode what the server encodes with the same
// types; keys are the contract's snake_case, spelled out in `CodingKeys`.
// Optional properties that are nil are left out of the JSON.

/// `hello`: who the server is and what this connection may do.
public struct HelloResult: Codable, Sendable, Hashable {
    /// Server name and version, e.g. `outatime/0.1.0`.
    public let server: String
    /// The protocol version in use: 1.
    public let `protocol`: Int
    /// This connection's session id, as it appears in ``Watcher``.
    public let session: String
    /// The client must send a frame at least this often (milliseconds).
    public let heartbeatMs: Int
    /// The largest frame body the server accepts, in bytes.
    public let maxFrame: Int
    /// The connection's role: `watch`, `operate` or `admin`.
    public let role: String
    /// In cluster mode, the node that answered (`--node`); absent on a
    /// single server.
    public let node: String?
    /// A secret for this connection alone: a later `hello` with it as
    /// `resume` closes this connection (`bye` `replaced`) before it is
    /// answered, so that a client reconnecting after a lost link is never
    /// listed twice. Absent from servers that predate it.
    public let resumeKey: String?

    /// Creates the result.
    public init(server: String, protocol: Int, session: String, heartbeatMs: Int, maxFrame: Int, role: String,
                node: String? = nil, resumeKey: String? = nil) {
        self.server = server
        self.protocol = `protocol`
        self.session = session
        self.heartbeatMs = heartbeatMs
        self.maxFrame = maxFrame
        self.role = role
        self.node = node
        self.resumeKey = resumeKey
    }

    private enum CodingKeys: String, CodingKey {
        case server, `protocol`, session, role, node
        case heartbeatMs = "heartbeat_ms"
        case maxFrame = "max_frame"
        case resumeKey = "resume_key"
    }
}

/// `ping`: the server's clock.
public struct PingResult: Codable, Sendable, Hashable {
    /// Server time, ISO 8601 UTC (see ``ISOTime``).
    public let time: String

    /// Creates the result.
    public init(time: String) {
        self.time = time
    }

    private enum CodingKeys: String, CodingKey {
        case time
    }
}

/// One entry of `stats`' `slowest_channels`: a channel whose ticks ran
/// late recently (PROTOCOL.md §6.10).
public struct SlowChannel: Codable, Sendable, Hashable {
    public var channel: String
    /// The most one of its ticks was built after it was due, in ms, over
    /// the server's window (the last 10 to 20 seconds).
    public var tickLatenessMaxMs: UInt64
    /// Its ticks built more than 50 ms after they were due, over the window.
    public var ticksLate: Int

    public init(channel: String, tickLatenessMaxMs: UInt64, ticksLate: Int) {
        self.channel = channel
        self.tickLatenessMaxMs = tickLatenessMaxMs
        self.ticksLate = ticksLate
    }

    enum CodingKeys: String, CodingKey {
        case channel
        case tickLatenessMaxMs = "tick_lateness_max_ms"
        case ticksLate = "ticks_late"
    }
}

/// One entry of ``ListResult``.
public struct ChannelSummary: Codable, Sendable, Hashable {
    /// The channel, in its `kind/name` form.
    public let channel: String
    /// The channel's kind.
    public let kind: ChannelKind
    /// Durable events applied so far.
    public let seq: Int64
    /// How many connections are subscribed.
    public let watchers: Int

    /// Creates the entry.
    public init(channel: String, kind: ChannelKind, seq: Int64, watchers: Int) {
        self.channel = channel
        self.kind = kind
        self.seq = seq
        self.watchers = watchers
    }

    private enum CodingKeys: String, CodingKey {
        case channel, kind, seq, watchers
    }
}

/// `list`: the channels, optionally of one kind.
public struct ListResult: Codable, Sendable, Hashable {
    /// The channels of this page, sorted by name.
    public let channels: [ChannelSummary]
    /// Present when more channels follow: the last channel of this page,
    /// to send as `after` for the next page.
    public let next: String?

    /// Creates the result.
    public init(channels: [ChannelSummary], next: String? = nil) {
        self.channels = channels
        self.next = next
    }

    private enum CodingKeys: String, CodingKey {
        case channels, next
    }
}

/// One durable event as `history` and recovery return it:
/// `{seq, event, data, at}`.
public struct HistoryEvent: Codable, Sendable, Hashable {
    /// The channel's seq after this event.
    public let seq: Int64
    /// The event name.
    public let event: String
    /// The event's payload.
    public let data: JSONValue
    /// When it happened, ISO 8601 UTC.
    public let at: String

    /// Creates the entry.
    public init(seq: Int64, event: String, data: JSONValue, at: String) {
        self.seq = seq
        self.event = event
        self.data = data
        self.at = at
    }

    private enum CodingKeys: String, CodingKey {
        case seq, event, data, at
    }
}

/// `subscribe`: the channel, its watchers, and either a full `state` or
/// (after `since`) `recovered: true` with the missed `events` (§3).
///
/// Clients read it as ``SubscribeResult`` (`state` a ``JSONValue``); the
/// server sends `SubscribeReply<RawJSON>`, the state encoded from the kind's
/// typed snapshot without a tree in between.
public struct SubscribeReply<State: Codable & Sendable & Hashable>: Codable, Sendable, Hashable {
    /// The channel, in its `kind/name` form.
    public let channel: String
    /// The channel's kind.
    public let kind: ChannelKind
    /// The channel's seq at the time of the snapshot or after the events.
    public let seq: Int64
    /// Everyone subscribed, the caller included (first); in a crowded
    /// channel only the first 100 (see ``watcherCount``).
    public let watchers: [Watcher]
    /// How many watchers the channel has, the caller included; more than
    /// `watchers.count` when the list was cut short. Nil from servers that
    /// do not send it.
    public let watcherCount: Int?
    /// The full state; nil (left out) when recovered by events.
    public let state: State?
    /// Set only when the request had `since`: whether `events` replace `state`.
    public let recovered: Bool?
    /// The events after `since`, in order; only when recovered.
    public let events: [HistoryEvent]?

    /// Creates the result. Pass `state` for a snapshot, or
    /// `recovered: true` and `events` for a recovery.
    public init(
        channel: String,
        kind: ChannelKind,
        seq: Int64,
        watchers: [Watcher],
        watcherCount: Int? = nil,
        state: State? = nil,
        recovered: Bool? = nil,
        events: [HistoryEvent]? = nil
    ) {
        self.channel = channel
        self.kind = kind
        self.seq = seq
        self.watchers = watchers
        self.watcherCount = watcherCount
        self.state = state
        self.recovered = recovered
        self.events = events
    }

    private enum CodingKeys: String, CodingKey {
        case channel, kind, seq, watchers, state, recovered, events
        case watcherCount = "watcher_count"
    }
}

/// A `subscribe` result as clients read it.
public typealias SubscribeResult = SubscribeReply<JSONValue>

/// `get`: the channel's current state. Clients read it as ``GetResult``;
/// the server sends `GetReply<RawJSON>` (see ``SubscribeReply``).
public struct GetReply<State: Codable & Sendable & Hashable>: Codable, Sendable, Hashable {
    /// The channel, in its `kind/name` form.
    public let channel: String
    /// The channel's kind.
    public let kind: ChannelKind
    /// The channel's seq.
    public let seq: Int64
    /// The full state.
    public let state: State

    /// Creates the result.
    public init(channel: String, kind: ChannelKind, seq: Int64, state: State) {
        self.channel = channel
        self.kind = kind
        self.seq = seq
        self.state = state
    }

    private enum CodingKeys: String, CodingKey {
        case channel, kind, seq, state
    }
}

/// A `get` result as clients read it.
public typealias GetResult = GetReply<JSONValue>

/// `history`: durable events after `after`, at most `limit`.
public struct HistoryResult: Codable, Sendable, Hashable {
    /// The channel, in its `kind/name` form.
    public let channel: String
    /// The channel's current seq.
    public let seq: Int64
    /// The events, oldest first.
    public let events: [HistoryEvent]

    /// Creates the result.
    public init(channel: String, seq: Int64, events: [HistoryEvent]) {
        self.channel = channel
        self.seq = seq
        self.events = events
    }

    private enum CodingKeys: String, CodingKey {
        case channel, seq, events
    }
}

/// `publish`: how many subscribers the message reached.
public struct PublishResult: Codable, Sendable, Hashable {
    /// Subscribers reached, the publisher included if subscribed.
    public let delivered: Int

    /// Creates the result.
    public init(delivered: Int) {
        self.delivered = delivered
    }

    private enum CodingKeys: String, CodingKey {
        case delivered
    }
}
