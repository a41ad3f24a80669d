import OutaTimeDomain
import OutaTimeProtocol

/// One channel's authoritative state on the loop thread.
final class Channel {
    let name: ChannelName
    /// Durable events applied so far (contract §4).
    var seq: Int64
    var state: ChannelState
    /// False until the channel's creation is committed; requests that need it
    /// wait in `creationWaiters` meanwhile.
    var isDurable: Bool
    var creationWaiters: [(ProtocolError?) -> Void] = []
    /// Event batches submitted but not yet committed. While any is pending,
    /// `state`/`seq` run ahead of storage, so snapshots wait (durable events
    /// are shown only after their commit).
    var uncommittedBatches = 0
    var commitWaiters: [() -> Void] = []
    /// Loop time (ms) the current tick series started at, and ticks done
    /// since: tick k is due at `tickBase + k × interval` (no drift).
    var tickBase: UInt64?
    var ticksDone: UInt64 = 0

    init(name: ChannelName, seq: Int64, state: ChannelState, isDurable: Bool) {
        self.name = name
        self.seq = seq
        self.state = state
        self.isDurable = isDurable
    }

    var key: String { name.description }
}

/// Who is subscribed to what, indexed both ways, so that a broadcast walks
/// one channel's subscribers and a disconnect walks one session's channels
/// (Redis `pubsub.c`).
struct SubscriptionIndex {
    private var subscribersByChannel: [String: [Int: Session]] = [:]
    private var channelsBySession: [Int: Set<String>] = [:]
    /// Total subscriptions, for `stats`.
    private(set) var count = 0

    /// Subscribers of `channel`, unordered.
    func subscribers(of channel: String) -> Dictionary<Int, Session>.Values? {
        subscribersByChannel[channel]?.values
    }

    func subscriberCount(of channel: String) -> Int {
        subscribersByChannel[channel]?.count ?? 0
    }

    func channels(of session: Session) -> Set<String> {
        channelsBySession[session.serial] ?? []
    }

    func isSubscribed(_ session: Session, to channel: String) -> Bool {
        subscribersByChannel[channel]?[session.serial] != nil
    }

    /// Adds the pair; returns false if it existed already.
    mutating func add(_ session: Session, to channel: String) -> Bool {
        guard subscribersByChannel[channel, default: [:]].updateValue(session, forKey: session.serial) == nil else {
            return false
        }
        channelsBySession[session.serial, default: []].insert(channel)
        count += 1
        return true
    }

    /// Removes the pair; returns false if it did not exist.
    mutating func remove(_ session: Session, from channel: String) -> Bool {
        guard subscribersByChannel[channel]?.removeValue(forKey: session.serial) != nil else { return false }
        if subscribersByChannel[channel]?.isEmpty == true { subscribersByChannel[channel] = nil }
        channelsBySession[session.serial]?.remove(channel)
        if channelsBySession[session.serial]?.isEmpty == true { channelsBySession[session.serial] = nil }
        count -= 1
        return true
    }

    /// Removes every subscription of `session`; returns the channels it had.
    mutating func removeAll(of session: Session) -> Set<String> {
        let channels = channelsBySession.removeValue(forKey: session.serial) ?? []
        for channel in channels {
            subscribersByChannel[channel]?.removeValue(forKey: session.serial)
            if subscribersByChannel[channel]?.isEmpty == true { subscribersByChannel[channel] = nil }
        }
        count -= channels.count
        return channels
    }

    /// The watchers of `channel` in the order they connected.
    func watchers(of channel: String) -> [Watcher] {
        (subscribersByChannel[channel]?.values.sorted { $0.serial < $1.serial } ?? []).map(\.watcher)
    }
}
