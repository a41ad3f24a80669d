import Foundation
import OutaTimeDomain
import OutaTimeProtocol

/// A durable change of a channel (an `event` push, or one of the events a
/// recovery returned): applying a channel's events in seq order to the state
/// at seq − 1 gives the state at seq.
public struct ChannelEvent: Sendable, Equatable {
    /// The channel, `kind/name`.
    public let channel: String
    /// The channel's seq after this event.
    public let seq: Int64
    /// The event name, e.g. `destination_set`.
    public let event: String
    /// The event's payload.
    public let data: JSONValue
    /// When it happened (server time, ISO 8601).
    public let at: String
    /// True when it came in a recovery after a reconnect or a gap (the
    /// `events` of a `subscribe` with `since`), false for a live push.
    public let replayed: Bool

    /// Creates an event.
    public init(channel: String, seq: Int64, event: String, data: JSONValue, at: String, replayed: Bool = false) {
        self.channel = channel
        self.seq = seq
        self.event = event
        self.data = data
        self.at = at
        self.replayed = replayed
    }

    /// One of a recovery's events, for `channel`.
    init(channel: String, history: HistoryEvent) {
        self.init(channel: channel, seq: history.seq, event: history.event,
                  data: history.data, at: history.at, replayed: true)
    }

    /// The event as the domain applies it.
    public var domainEvent: DomainEvent { DomainEvent(event, data) }

    /// ``at`` as a date; the epoch when the server sent something unparsable.
    public var date: Date { ISOTime.parse(at) ?? Date(timeIntervalSince1970: 0) }
}

/// Ephemeral progress of a channel (speed, remaining time, lap time): render
/// the latest, never derive durable state from it.
public struct ChannelTick: Sendable, Equatable {
    /// The channel, `kind/name`.
    public let channel: String
    /// The kind's progress values.
    public let data: JSONValue

    /// Creates a tick.
    public init(channel: String, data: JSONValue) {
        self.channel = channel
        self.data = data
    }
}

/// A `publish`ed message delivered to this subscriber.
public struct ChannelMessage: Sendable, Equatable {
    /// The channel, `kind/name`.
    public let channel: String
    /// Who published it.
    public let from: Watcher
    /// The published JSON, as given (possibly `null`).
    public let data: JSONValue

    /// Creates a message.
    public init(channel: String, from: Watcher, data: JSONValue) {
        self.channel = channel
        self.from = from
        self.data = data
    }
}

/// Watchers of a channel came or went.
public struct PresenceChange: Sendable, Equatable {
    /// The channel, `kind/name`.
    public let channel: String
    /// Connections that subscribed.
    public let joined: [Watcher]
    /// Connections that unsubscribed, closed or were closed.
    public let left: [Watcher]
    /// The channel's watchers after the change (nil from servers that do
    /// not send it). In a crowded channel the lists are cut short and this
    /// is the only exact count.
    public let watcherCount: Int?

    /// Creates a presence change.
    public init(channel: String, joined: [Watcher], left: [Watcher], watcherCount: Int? = nil) {
        self.channel = channel
        self.joined = joined
        self.left = left
        self.watcherCount = watcherCount
    }
}

/// How a subscription (re)gained the channel's state: reported once per
/// `subscribe` reply through ``OutaTimeConnection/onSync``.
public struct ChannelSync: Sendable, Equatable {
    /// How the mirror was brought up to date.
    public enum Method: Sendable, Equatable {
        /// A full state, on the first subscription.
        case snapshot
        /// A full state that replaced the mirror's: the server could not
        /// recover from `since` (events pruned, or the channel is newer).
        case reloaded
        /// Only the missed events, applied to the kept state (`recovered: true`).
        case recovered(events: Int)
    }

    /// The channel, `kind/name`.
    public let channel: String
    /// The seq the mirror had before (nil for a first subscription).
    public let sinceSeq: Int64?
    /// The mirror's seq now.
    public let seq: Int64
    /// How it got there.
    public let method: Method

    /// Creates a sync report.
    public init(channel: String, sinceSeq: Int64?, seq: Int64, method: Method) {
        self.channel = channel
        self.sinceSeq = sinceSeq
        self.seq = seq
        self.method = method
    }
}
