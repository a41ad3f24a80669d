import Foundation
import OutaTimeDomain
import OutaTimeProtocol

/// A durable change of a channel as the connection reports it: the
/// protocol's ``EventPush`` (a live push, or one of the events a recovery
/// returned) and whether it was replayed. Applying a channel's events in
/// seq order to the state at seq − 1 gives the state at seq.
///
/// The push's members read through: `event.channel`, `event.seq`,
/// `event.event`, `event.data`, `event.at`.
@dynamicMemberLookup
public struct ChannelEvent: Sendable, Hashable {
    /// The event as the server sent it (or, for a replayed event, as the
    /// server would have sent it live).
    public let push: EventPush
    /// True when it came in a recovery after a reconnect or a gap (the
    /// `events` of a `subscribe` with `since`), false for a live push.
    public let replayed: Bool

    /// Wraps a push; `replayed` says whether it came from a recovery.
    public init(_ push: EventPush, replayed: Bool = false) {
        self.push = push
        self.replayed = replayed
    }

    /// One of a recovery's events, for `channel`.
    init(channel: String, history: HistoryEvent) {
        self.init(EventPush(channel: channel, history: history), replayed: true)
    }

    /// A member of ``push`` (`channel`, `seq`, `event`, `data`, `at`).
    public subscript<Value>(dynamicMember member: KeyPath<EventPush, Value>) -> Value {
        push[keyPath: member]
    }

    /// The event as the domain applies it.
    public var domainEvent: DomainEvent { DomainEvent(push.event, push.data) }

    /// The push's `at` as a date; the epoch when the server sent something
    /// unparsable.
    public var date: Date { ISOTime.parse(push.at) ?? Date(timeIntervalSince1970: 0) }
}
