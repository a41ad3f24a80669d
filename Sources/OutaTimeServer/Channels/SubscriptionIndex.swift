import OutaTimeProtocol

/// One channel's subscribers in a flat array, so the broadcast loop walks
/// contiguous memory (no hash-table walk), with each session's position for
/// O(1) removal (swap with the last).
final class SubscriberList {
    private(set) var members: ContiguousArray<Connection> = []
    private var positions: [Int: Int] = [:]

    var count: Int { members.count }

    func contains(_ session: Connection) -> Bool { positions[session.serial] != nil }

    /// Adds `session`; false if it was already a member.
    func insert(_ session: Connection) -> Bool {
        guard positions[session.serial] == nil else { return false }
        positions[session.serial] = members.count
        members.append(session)
        return true
    }

    /// Removes `session`; false if it was not a member.
    func remove(_ session: Connection) -> Bool {
        guard let index = positions.removeValue(forKey: session.serial) else { return false }
        let last = members.removeLast()
        if index < members.count {
            members[index] = last
            positions[last.serial] = index
        }
        return true
    }
}

/// Who is subscribed to what, indexed both ways, so that a broadcast walks
/// one channel's subscribers and a disconnect walks one session's channels
/// (Redis `pubsub.c`). A session's own channels live in the session
/// (``Connection/subscribed``): most hold a handful, so a small array costs
/// less memory per idle connection than a set.
struct SubscriptionIndex {
    private var subscribersByChannel: [String: SubscriberList] = [:]
    /// Per channel, the connections (serials) that subscribed with `messages:
    /// false` (protocol §6.3): only message broadcasts look here, and only
    /// while anyone opted out.
    private var withoutMessages: [String: Set<Int>] = [:]
    /// Total subscriptions, for `stats`.
    private(set) var count = 0

    /// The channel last found by ``subscribers(of:)`` and its list: a
    /// publisher pipelines its messages to one channel, and comparing the
    /// name costs less than hashing it for every publish (a twentieth of a
    /// publish at 10 subscribers under callgrind, issue 28). Cleared when a
    /// channel's list goes, so it never holds a list the index dropped.
    private var lastFound: (channel: String, list: SubscriberList)?

    /// Subscribers of `channel`, in no particular order.
    mutating func subscribers(of channel: String) -> SubscriberList? {
        if let lastFound, lastFound.channel == channel { return lastFound.list }
        guard let list = subscribersByChannel[channel] else { return nil }
        lastFound = (channel, list)
        return list
    }

    func subscriberCount(of channel: String) -> Int {
        subscribersByChannel[channel]?.count ?? 0
    }

    func isSubscribed(_ session: Connection, to channel: String) -> Bool {
        subscribersByChannel[channel]?.contains(session) ?? false
    }

    /// Adds the pair; returns false if it existed already.
    mutating func add(_ session: Connection, to channel: String) -> Bool {
        let list: SubscriberList
        if let existing = subscribersByChannel[channel] {
            list = existing
        } else {
            list = SubscriberList()
            subscribersByChannel[channel] = list
        }
        guard list.insert(session) else { return false }
        session.subscribed.append(channel)
        count += 1
        return true
    }

    /// Records whether `session` wants `message` pushes of `channel`
    /// (`subscribe`'s `messages`; a later `subscribe` changes it).
    mutating func setMessages(_ wanted: Bool, for session: Connection, on channel: String) {
        if wanted {
            guard withoutMessages[channel]?.remove(session.serial) != nil else { return }
            if withoutMessages[channel]?.isEmpty == true { withoutMessages[channel] = nil }
        } else {
            withoutMessages[channel, default: []].insert(session.serial)
        }
    }

    /// The connections of `channel` that get no `message` pushes (nil: none).
    func sessionsWithoutMessages(on channel: String) -> Set<Int>? {
        withoutMessages.isEmpty ? nil : withoutMessages[channel]
    }

    /// Removes the pair; returns false if it did not exist.
    mutating func remove(_ session: Connection, from channel: String) -> Bool {
        if !withoutMessages.isEmpty { setMessages(true, for: session, on: channel) }
        guard let list = subscribersByChannel[channel], list.remove(session) else { return false }
        if list.count == 0 { drop(channel) }
        if let index = session.subscribed.firstIndex(of: channel) { session.subscribed.remove(at: index) }
        count -= 1
        return true
    }

    /// Forgets `channel`'s list, now empty.
    private mutating func drop(_ channel: String) {
        subscribersByChannel[channel] = nil
        lastFound = nil
    }

    /// Removes every subscription of `session`; returns the channels it had.
    mutating func removeAll(of session: Connection) -> [String] {
        let channels = session.subscribed
        session.subscribed = []
        for channel in channels {
            if !withoutMessages.isEmpty { setMessages(true, for: session, on: channel) }
            guard let list = subscribersByChannel[channel], list.remove(session) else { continue }
            if list.count == 0 { drop(channel) }
            count -= 1
        }
        return channels
    }

    /// Up to `limit` watchers of `channel`: all of them in the order they
    /// connected when there are at most `limit`; otherwise `first` (the
    /// caller) and then others in no particular order, without sorting a
    /// crowd.
    func watchers(of channel: String, limit: Int, first: Connection? = nil) -> [Watcher] {
        guard let list = subscribersByChannel[channel] else { return [] }
        if list.count <= limit {
            return list.members.sorted { $0.serial < $1.serial }.map(\.watcher)
        }
        var result: [Watcher] = []
        result.reserveCapacity(limit)
        if let first, list.contains(first) { result.append(first.watcher) }
        for member in list.members where result.count < limit && member !== first {
            result.append(member.watcher)
        }
        return result
    }
}
