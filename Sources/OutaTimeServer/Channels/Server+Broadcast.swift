import OutaTimeProtocol

extension Server {
    /// Encodes `message` once and queues the same bytes to every subscriber
    /// of `channel` except `except`. Returns how many got it.
    /// In cluster mode the same bytes go once to the nodes holding
    /// watchers of the channel (`seq`: an event's; `exceptRemote`: a
    /// remote session that must not get it).
    @discardableResult
    func broadcast<Message: Encodable>(_ message: Message, to channel: String, except: Connection? = nil,
                                       seq: Int64? = nil, exceptRemote: String? = nil) -> Int {
        let remote = hasRemoteWatchers(channel)
        guard let (subscribers, frame) = encodedOnce(message, for: channel, remote: remote) else { return 0 }
        if remote { relayOut(frame, channel: channel, seq: seq, except: exceptRemote) }
        guard let subscribers else { return 0 }
        var delivered = 0
        let limit = config.outputLimitBytes
        for session in subscribers.members where session !== except && session.state.isReady {
            if session.queue(frame, limit: limit) { delivered += 1 }
        }
        countDelivered(delivered, of: frame)
        return delivered
    }

    /// Encodes a `message` push once and queues it to every subscriber of
    /// `channel` that did not opt out (`subscribe` `messages: false`); a
    /// subscriber whose output is backed up gets a count instead
    /// (``Connection/queueMessage(_:channel:backlog:)``). Returns how many got it.
    func broadcastMessage(_ message: MessagePush, to channel: String, exceptRemote: String? = nil) -> Int {
        let remote = hasRemoteWatchers(channel)
        guard let (subscribers, frame) = encodedOnce(message, for: channel, remote: remote) else { return 0 }
        if remote { relayOut(frame, channel: channel, seq: nil, except: exceptRemote) }
        guard let subscribers else { return 0 }
        let delivered = queueMessage(frame, to: subscribers, channel: channel)
        countDelivered(delivered, of: frame)
        return delivered
    }

    /// Queues a `message` frame to the channel's local subscribers that
    /// take messages (also a relayed one); returns how many got it.
    func queueMessage(_ frame: Frame, to subscribers: SubscriberList, channel: String) -> Int {
        var delivered = 0
        // Read once, not through each session's unowned `server` (a
        // retain per subscriber: 5 % of fan-out, measured).
        let backlog = config.tickBacklogBytes
        if let quiet = subscriptions.sessionsWithoutMessages(on: channel) {
            for session in subscribers.members where !quiet.contains(session.serial) {
                if session.queueMessage(frame, channel: channel, backlog: backlog) { delivered += 1 }
            }
        } else {
            for session in subscribers.members where session.queueMessage(frame, channel: channel, backlog: backlog) {
                delivered += 1
            }
        }
        return delivered
    }

    /// Encodes a tick once and queues it to every watcher of `channel`;
    /// a watcher whose output is backed up gets only the newest
    /// (``Connection/queueTick(_:channel:)``).
    func broadcastTick<Data: Encodable & Sendable>(_ data: Data, to channel: String) {
        let remote = hasRemoteWatchers(channel)
        guard let (subscribers, frame) = encodedOnce(TickPush(channel: channel, data: data), for: channel, remote: remote) else { return }
        if remote { relayOut(frame, channel: channel, seq: nil, except: nil) }
        guard let subscribers else { return }
        var delivered = 0
        for session in subscribers.members where session.queueTick(frame, channel: channel) {
            delivered += 1
        }
        countDelivered(delivered, of: frame)
    }

    /// The channel's subscribers and `message` encoded once for all of
    /// them (and for the relay when `remote`); nil when nobody watches or
    /// the message does not encode.
    private func encodedOnce<Message: Encodable>(_ message: Message, for channel: String,
                                                 remote: Bool) -> (SubscriberList?, Frame)? {
        encodedOnce(for: channel, remote: remote) { try encoder.frame(message) }
    }

    /// ``encodedOnce(_:for:remote:)`` for a message that writes its own
    /// fields (a `message` push, a tick): no `Codable`, no dynamic cast.
    private func encodedOnce<Message: JSONWritable>(_ message: Message, for channel: String,
                                                    remote: Bool) -> (SubscriberList?, Frame)? {
        encodedOnce(for: channel, remote: remote) { try encoder.frame(writing: message) }
    }

    private func encodedOnce(for channel: String, remote: Bool,
                             _ encode: () throws -> Frame) -> (SubscriberList?, Frame)? {
        let subscribers = subscriptions.subscribers(of: channel)
        guard remote || (subscribers?.count ?? 0) > 0 else { return nil }
        do {
            return (subscribers, try encode())
        } catch {
            logger.error("encoding a broadcast failed", metadata: ["channel": "\(channel)", "error": "\(error)"])
            return nil
        }
    }

    /// Counted once per broadcast: the fan-out loop stays lean.
    private func countDelivered(_ delivered: Int, of frame: Frame) {
        counters.deliveries += delivered
        counters.framesOut += delivered
        counters.bytesOut += delivered * frame.count
    }

    /// Tells the channel's watchers who joined or left. A channel of at most
    /// `presenceLimit` watchers gets a `presence` push at once (not to
    /// `except`); a crowded one gets a summary per `presenceIntervalMs` (see
    /// ``PresenceSummary``), so mass subscribes stay linear.
    func broadcastPresence(channel: String, joined: [Watcher], left: [Watcher], except: Connection?,
                           exceptRemote: String? = nil) {
        let watcherCount = watcherCount(of: channel)
        if watcherCount <= config.presenceLimit, gatheredPresence[channel] == nil {
            broadcast(PresencePush(channel: channel, joined: joined, left: left, watcherCount: watcherCount),
                      to: channel, except: except, exceptRemote: exceptRemote ?? except?.id)
            return
        }
        let summary: PresenceSummary
        if let existing = gatheredPresence[channel] {
            summary = existing
        } else {
            summary = PresenceSummary(limit: config.presenceLimit)
            gatheredPresence[channel] = summary
            if gatheredPresence.count == 1 {
                presenceTimer.start(timeoutMs: UInt64(config.presenceIntervalMs)) { [unowned self] in
                    self.sendGatheredPresence()
                }
            }
        }
        for watcher in joined { summary.join(watcher) }
        for watcher in left { summary.leave(watcher) }
    }

    /// One summary push per crowded channel, to every watcher.
    func sendGatheredPresence() {
        let gathered = gatheredPresence
        gatheredPresence = [:]
        for (channel, summary) in gathered.sorted(by: { $0.key < $1.key }) where summary.hasChanges {
            broadcast(summary.push(channel: channel, watcherCount: watcherCount(of: channel)),
                      to: channel)
        }
    }
}

/// A crowded channel's joins and leaves since its last summary. Net changes
/// only: a watcher that joins and leaves again in one interval is in
/// neither list nor count. The lists show at most `limit` watchers; the
/// counts are exact.
final class PresenceSummary {
    private let limit: Int
    private var joined: [Watcher] = []
    private var left: [Watcher] = []
    private var joinedSessions: Set<String> = []
    private var leftSessions: Set<String> = []

    init(limit: Int) { self.limit = limit }

    var hasChanges: Bool { !joinedSessions.isEmpty || !leftSessions.isEmpty }

    func join(_ watcher: Watcher) {
        if leftSessions.remove(watcher.session) != nil {
            left.removeAll { $0.session == watcher.session }
        } else if joinedSessions.insert(watcher.session).inserted, joined.count < limit {
            joined.append(watcher)
        }
    }

    func leave(_ watcher: Watcher) {
        if joinedSessions.remove(watcher.session) != nil {
            joined.removeAll { $0.session == watcher.session }
        } else if leftSessions.insert(watcher.session).inserted, left.count < limit {
            left.append(watcher)
        }
    }

    func push(channel: String, watcherCount: Int) -> PresencePush {
        PresencePush(channel: channel, joined: joined, left: left, watcherCount: watcherCount,
                     joinedCount: joinedSessions.count > joined.count ? joinedSessions.count : nil,
                     leftCount: leftSessions.count > left.count ? leftSessions.count : nil)
    }
}
