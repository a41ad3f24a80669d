import Foundation
import OutaTimeStore
import OutaTimeDomain
import OutaTimeProtocol

/// Subscriptions, snapshots, history and ephemeral messages. Snapshots and
/// history show committed events only: on a channel with commits in flight
/// they retry once it is settled.
extension Server {
    /// Largest `since`/`after` accepted: the contract's integer range.
    static let maxSeq: Int64 = 1 << 53

    /// `subscribe`: join (creating the channel on first use, unless the
    /// role is `watch`: ``channelToRead(_:for:)``), announce the new
    /// watcher to the others, reply with a snapshot or the missed events.
    func subscribe(_ request: Request, on session: Connection) throws(ProtocolError) -> Handled {
        let name = try scopedChannel(request, for: session)
        let since = try request.optionalInt("since", in: 0...Self.maxSeq)
        let messages = try request.optionalBool("messages") ?? true
        let key = name.description
        if !subscriptions.isSubscribed(session, to: key),
           session.subscribed.count >= config.maxSubscriptionsPerSession {
            throw ProtocolError(.tooManySubscriptions,
                "cannot subscribe to '\(key)': this connection already has \(config.maxSubscriptionsPerSession) subscriptions (the limit); unsubscribe from one first")
        }
        let channel = try channelToRead(name, for: session)
        guard channel.pipeline.isSettled else { return .retry(channel) }
        if subscriptions.add(session, to: key) {
            broadcastPresence(channel: key, joined: [session.watcher], left: [], except: session)
        }
        subscriptions.setMessages(messages, for: session, on: key)
        // Nothing missed (since == seq) is a recovery with no events; a
        // `since` ahead of the channel means the store was reset; too many
        // missed events (beyond the history kept, or more than a frame
        // holds: FrameBounds.maxRecoveredEvents) get the full state.
        let recoverable = Int64(min(config.historyLimit, FrameBounds.maxRecoveredEvents))
        guard let since, since < channel.seq, channel.seq - since <= recoverable else {
            let recovered = since.map { $0 == channel.seq }
            session.reply(request.id, subscribeResult(channel, session: session, recovered: recovered,
                                                      events: recovered == true ? [] : nil))
            return .replied
        }
        // A complete, gap-free run up to the channel's seq is a recovery;
        // anything else gets the full state.
        let missed = channel.seq - since
        let seq = channel.seq
        let slot = session.reserveReply()
        readHistory(channel: key, after: since, through: seq, limit: Int(missed)) { [unowned self] result in
            let events = (try? result.get()) ?? []
            // Against the seq now: if the channel moved on meanwhile, the
            // state is sent instead.
            let complete = events.count == Int(missed) && events.first?.seq == since + 1
                && events.last?.seq == channel.seq
            session.fill(slot, id: request.id, self.subscribeResult(channel, session: session, recovered: complete,
                                                                    events: complete ? events : nil))
            session.readAnswered(slot)
        }
        return .reading(slot)
    }

    private func subscribeResult(_ channel: Channel, session: Connection, recovered: Bool?,
                                 events: [HistoryEvent]?) -> SubscribeReply<RawJSON> {
        SubscribeReply(channel: channel.key, kind: channel.name.kind, seq: channel.seq,
                       watchers: watcherList(of: channel.key, limit: config.presenceLimit, first: session),
                       watcherCount: watcherCount(of: channel.key),
                       state: recovered == true ? nil : wireState(of: channel),
                       recovered: recovered, events: events)
    }

    /// The channel's state as clients see it now, encoded once from the
    /// kind's typed snapshot (no `JSONValue` tree in between).
    private func wireState(of channel: Channel) -> RawJSON {
        let state = channel.state.wireState(at: clock.now)
        do {
            return try RawJSON(encoding: state)
        } catch {
            // The states hold strings, integers and arrays only.
            preconditionFailure("the state of '\(channel.key)' did not encode: \(error)")
        }
    }

    /// `unsubscribe`: leave, and tell the remaining watchers.
    func unsubscribe(_ request: Request, on session: Connection) throws(ProtocolError) -> Handled {
        let key = try scopedChannel(request, for: session).description
        guard subscriptions.remove(session, from: key) else {
            throw ProtocolError(.notSubscribed, "this connection is not subscribed to '\(key)'")
        }
        broadcastPresence(channel: key, joined: [], left: [session.watcher], except: nil)
        release(session, from: key)
        session.reply(request.id, EmptyResult())
        return .replied
    }

    /// `get`: a snapshot without subscribing (creates the channel on first
    /// use, unless the role is `watch`).
    func get(_ request: Request, on session: Connection) throws(ProtocolError) -> Handled {
        let channel = try channelToRead(try scopedChannel(request, for: session), for: session)
        guard channel.pipeline.isSettled else { return .retry(channel) }
        session.reply(request.id, GetReply(channel: channel.key, kind: channel.name.kind, seq: channel.seq,
                                           state: wireState(of: channel)))
        return .replied
    }

    /// The channel a read names. A `watch` connection creates none: a
    /// channel that does not exist reads as new and empty (its kind's
    /// initial state, seq 0) from a stand-in that is neither kept nor
    /// stored, so reading costs no place under `--max-channels` or the
    /// quotas. A subscription to it is kept by name
    /// (``SubscriptionIndex``), so once someone who may create the channel
    /// does, its events reach the watcher from seq 1 on, as to any
    /// subscriber of a new channel.
    func channelToRead(_ name: ChannelName, for session: Connection) throws(ProtocolError) -> Channel {
        if session.role < .operate, channels[name.description] == nil {
            // Cluster mode: it may be stored but not loaded yet (read, not created).
            if mustLoadBeforeReading(name.description) {
                return try openChannel(name, creator: nil, who: "", create: false)
            }
            return unstoredChannel(name)
        }
        return try openChannel(name, for: session)
    }

    /// A new channel's stand-in for reads: its kind's initial state, seq 0.
    func unstoredChannel(_ name: ChannelName) -> Channel {
        Channel(name: name, state: name.kind.initialState(now: clock.now),
                pipeline: CommitPipeline(storedSeq: 0, storedStateSeq: 0))
    }

    /// `list`: every durable channel in the connection's scope, optionally
    /// of one kind, sorted by name.
    func list(_ request: Request, on session: Connection) throws(ProtocolError) -> Handled {
        var kind: ChannelKind?
        if let text = try request.optionalString("kind") {
            guard let parsed = ChannelKind(rawValue: text) else {
                throw ProtocolError(.unknownKind, "unknown channel kind '\(text)'; valid kinds: \(ChannelKind.allowedList)")
            }
            kind = parsed
        }
        let after = try request.optionalString("after")
        let limit = try request.optionalInt("limit", in: 1...Int64(Self.listLimitMax)).map(Int.init) ?? Self.listLimitMax
        let pageSize = min(limit, listEntriesPerFrame)
        let scope = session.scope
        if cluster != nil {
            return listStored(kind: kind, after: after, pageSize: pageSize, request, on: session)
        }
        let matching = channels.values
            .filter { $0.pipeline.isDurable && (kind == nil || $0.name.kind == kind) && scope.allows($0.name)
                && (after == nil || $0.key > after!) }
            .sorted { $0.key < $1.key }
        let page = matching.prefix(pageSize)
        let summaries = page.map { ChannelSummary(channel: $0.key, kind: $0.name.kind, seq: $0.seq,
                                                  watchers: watcherCount(of: $0.key)) }
        let next = matching.count > pageSize ? page.last?.key : nil
        session.reply(request.id, ListResult(channels: summaries, next: next))
        return .replied
    }

    /// Cluster mode's `list`: the channels are spread over the nodes, so
    /// the page comes from the store (read off the loop); this node's own
    /// channels show their seq and watchers from memory, others their
    /// stored seq and this node's watchers of them.
    private func listStored(kind: ChannelKind?, after: String?, pageSize: Int, _ request: Request,
                            on session: Connection) -> Handled {
        let scope = session.scope
        let slot = session.reserveReply()
        readStoredChannels { [unowned self] result in
            switch result {
            case .success(let records):
                let matching = records
                    .compactMap { record -> (String, ChannelName, Int64)? in
                        guard let name = try? ChannelName.parse(record.name),
                              (kind == nil || name.kind == kind) && scope.allows(name) && (after == nil || record.name > after!) else { return nil }
                        return (record.name, name, self.channels[record.name]?.pipeline.committedSeq ?? record.seq)
                    }
                    .sorted { $0.0 < $1.0 }
                let page = matching.prefix(pageSize)
                let summaries = page.map { ChannelSummary(channel: $0.0, kind: $0.1.kind, seq: $0.2, watchers: self.watcherCount(of: $0.0)) }
                session.fill(slot, id: request.id, ListResult(channels: summaries, next: matching.count > pageSize ? page.last?.0 : nil))
            case .failure(let failure):
                session.fill(slot, id: request.id, failure: ProtocolError(.internal, "could not list the stored channels: \(failure)"))
            }
            session.readAnswered(slot)
        }
        return .reading(slot)
    }

    /// Reads every stored channel off the loop; `completion` runs on it.
    func readStoredChannels(_ completion: @escaping (Result<[ChannelRecord], StoreFailure>) -> Void) {
        nextTicket += 1
        let ticket = nextTicket
        pendingChannelReads[ticket] = completion
        let store = self.store
        let sender = inbox.sender
        DispatchQueue.global().async {
            let result: Result<[ChannelRecord], StoreFailure>
            do {
                result = .success(try store.loadChannels())
            } catch {
                result = .failure(StoreFailure(error))
            }
            sender.post(.channelsRead(ticket: ticket, result))
        }
    }

    /// `list`'s largest (and default) `limit`.
    static let listLimitMax = 1000

    /// The most `list` entries one reply holds so that it fits in
    /// `max_frame` (at least 1): an entry is at most 148 bytes (a 73-byte
    /// channel name, an 8-byte kind, a 16-digit seq, a 7-digit count and
    /// 44 bytes of JSON around them), and 2,048 bytes leave room for the
    /// envelope, the longest escaped `id` and `next` (protocol §6.6).
    var listEntriesPerFrame: Int { max(1, (config.maxFrame - 2_048) / 150) }

    /// `history`: pages through the durable events (read off the loop thread).
    func history(_ request: Request, on session: Connection) throws(ProtocolError) -> Handled {
        let name = try scopedChannel(request, for: session)
        let after = try request.optionalInt("after", in: 0...Self.maxSeq) ?? 0
        let limit = try request.optionalInt("limit", in: 1...1000) ?? 100
        let key = name.description
        if mustLoadBeforeReading(key) { return .retry(try openChannel(name, creator: nil, who: "", create: false)) }
        guard let channel = channels[key], channel.pipeline.isDurable else {
            // An unknown channel has no events (and is not created by reading).
            session.reply(request.id, HistoryResult(channel: key, seq: 0, events: []))
            return .replied
        }
        guard channel.pipeline.isSettled else { return .retry(channel) }
        guard after < channel.seq else {
            session.reply(request.id, HistoryResult(channel: key, seq: channel.seq, events: []))
            return .replied
        }
        let seq = channel.seq
        let slot = session.reserveReply()
        readHistory(channel: key, after: max(after, historyStart(of: channel)), through: seq, limit: Int(limit)) { [unowned self] result in
            switch result {
            case .success(let events):
                session.fill(slot, id: request.id, HistoryResult(channel: key, seq: seq, events: events))
            case .failure(let failure):
                session.fill(slot, id: request.id, failure: ProtocolError(.internal,
                    "could not read the history of '\(key)': \(failure)"))
            }
            session.readAnswered(slot)
        }
        return .reading(slot)
    }

    /// `publish`: an ephemeral message to every subscriber, encoded once.
    func publish(_ request: Request, on session: Connection) throws(ProtocolError) -> Handled {
        let key = try scopedChannel(request, for: session).description
        guard let data = request.value("data") else {
            throw ProtocolError(.invalidRequest, "field 'data' is required (any JSON value)")
        }
        counters.messagesPublished += 1
        let delivered = broadcastMessage(MessagePush(channel: key, from: session.watcher, data: data), to: key)
        session.reply(request.id, PublishResult(delivered: delivered + (cluster?.remoteCount(of: key) ?? 0)))
        return .replied
    }
}
