import OutaTimeDomain
import OutaTimeProtocol

extension Server {
    /// Largest `since`/`after` accepted: the contract's integer range.
    static let maxSeq: Int64 = 1 << 53

    /// `subscribe`: join (creating the channel on first use), announce the
    /// new watcher to the others, reply with a snapshot or the missed events.
    func subscribe(_ request: Request, on session: Session) throws(ProtocolError) {
        let name = try request.channel()
        let since = try request.optionalInt("since", in: 0...Self.maxSeq)
        let key = name.description
        if !subscriptions.isSubscribed(session, to: key),
           session.subscribed.count >= config.maxSubscriptionsPerSession {
            throw ProtocolError(.tooManySubscriptions,
                "this connection already has \(config.maxSubscriptionsPerSession) subscriptions (the limit); unsubscribe from one first")
        }
        try withDurableChannel(name, request: request, session: session) { [unowned self] (channel: Channel) throws(ProtocolError) in
            // Snapshots show committed state only: wait for pending events.
            try self.whenCommitted(channel, session: session, request: request) { [unowned self] () throws(ProtocolError) in
                if self.subscriptions.add(session, to: key) {
                    self.broadcastPresence(channel: key, joined: [session.watcher], left: [], except: session)
                }
                guard let since, since < channel.seq else {
                    // Nothing missed (since == seq) is a recovery with no events;
                    // a `since` ahead of the channel means the store was reset.
                    let recovered = since.map { $0 == channel.seq }
                    session.reply(request.id, self.subscribeResult(channel, session: session, recovered: recovered,
                                                                   events: recovered == true ? [] : nil))
                    return
                }
                self.recover(channel, since: since, request: request, session: session)
            }
        }
    }

    /// Reads the events after `since`; a complete, gap-free run up to the
    /// channel's current seq is a recovery, anything else gets the full state.
    private func recover(_ channel: Channel, since: Int64, request: Request, session: Session) {
        let missed = channel.seq - since
        guard missed <= Int64(config.historyLimit) else {
            session.reply(request.id, subscribeResult(channel, session: session, recovered: false, events: nil))
            return
        }
        block(session)
        readHistory(channel: channel.key, after: since, limit: Int(missed)) { [unowned self] result in
            self.finishWait(session) { () throws(ProtocolError) in
                let events = (try? result.get()) ?? []
                let complete = events.count == Int(missed) && events.first?.seq == since + 1
                    && events.last?.seq == channel.seq
                session.reply(request.id, complete
                    ? self.subscribeResult(channel, session: session, recovered: true, events: events)
                    : self.subscribeResult(channel, session: session, recovered: false, events: nil))
            } onError: { error in
                session.fail(request.id, error)
            }
        }
    }

    private func subscribeResult(_ channel: Channel, session: Session, recovered: Bool?, events: [HistoryEvent]?) -> SubscribeResult {
        SubscribeResult(channel: channel.key, kind: channel.name.kind, seq: channel.seq,
                        watchers: subscriptions.watchers(of: channel.key, limit: config.presenceLimit, first: session),
                        watcherCount: subscriptions.subscriberCount(of: channel.key),
                        state: recovered == true ? nil : channel.state.snapshot(at: clock.now),
                        recovered: recovered, events: events)
    }

    /// `unsubscribe`: leave, and tell the remaining watchers.
    func unsubscribe(_ request: Request, on session: Session) throws(ProtocolError) {
        let key = try request.channel().description
        guard subscriptions.remove(session, from: key) else {
            throw ProtocolError(.notSubscribed, "this connection is not subscribed to '\(key)'")
        }
        broadcastPresence(channel: key, joined: [], left: [session.watcher], except: nil)
        release(session, from: key)
        session.reply(request.id, EmptyResult())
    }

    /// `get`: a snapshot without subscribing (creates the channel on first use).
    func get(_ request: Request, on session: Session) throws(ProtocolError) {
        let name = try request.channel()
        try withDurableChannel(name, request: request, session: session) { [unowned self] (channel: Channel) throws(ProtocolError) in
            try self.whenCommitted(channel, session: session, request: request) { [unowned self] () throws(ProtocolError) in
                session.reply(request.id, GetResult(channel: channel.key, kind: channel.name.kind, seq: channel.seq,
                                                    state: channel.state.snapshot(at: self.clock.now)))
            }
        }
    }

    /// `list`: every durable channel, optionally of one kind, sorted by name.
    func list(_ request: Request, on session: Session) throws(ProtocolError) {
        var kind: ChannelKind?
        if let text = try request.optionalString("kind") {
            guard let parsed = ChannelKind(rawValue: text) else {
                throw ProtocolError(.unknownKind, "unknown channel kind '\(text)'; valid kinds: \(ChannelKind.allowedList)")
            }
            kind = parsed
        }
        let summaries = channels.values
            .filter { $0.isDurable && (kind == nil || $0.name.kind == kind) }
            .sorted { $0.key < $1.key }
            .map { ChannelSummary(channel: $0.key, kind: $0.name.kind, seq: $0.seq,
                                  watchers: subscriptions.subscriberCount(of: $0.key)) }
        session.reply(request.id, ListResult(channels: summaries))
    }

    /// `history`: pages through the durable events (read off the loop thread).
    func history(_ request: Request, on session: Session) throws(ProtocolError) {
        let name = try request.channel()
        let after = try request.optionalInt("after", in: 0...Self.maxSeq) ?? 0
        let limit = try request.optionalInt("limit", in: 1...1000) ?? 100
        let key = name.description
        guard let channel = channels[key], channel.isDurable else {
            // An unknown channel has no events (and is not created by reading).
            session.reply(request.id, HistoryResult(channel: key, seq: 0, events: []))
            return
        }
        // Like snapshots, history shows committed events only.
        try whenCommitted(channel, session: session, request: request) { [unowned self] () throws(ProtocolError) in
            guard after < channel.seq else {
                session.reply(request.id, HistoryResult(channel: key, seq: channel.seq, events: []))
                return
            }
            self.block(session)
            self.readHistory(channel: key, after: max(after, self.historyStart(of: channel)), limit: Int(limit)) { [unowned self] result in
                self.finishWait(session) { () throws(ProtocolError) in
                    switch result {
                    case .success(let events):
                        session.reply(request.id, HistoryResult(channel: key, seq: channel.seq, events: events))
                    case .failure(let failure):
                        throw ProtocolError(.internal, "could not read the history of '\(key)': \(failure.message)")
                    }
                } onError: { error in
                    session.fail(request.id, error)
                }
            }
        }
    }

    /// `publish`: an ephemeral message to every subscriber, encoded once.
    func publish(_ request: Request, on session: Session) throws(ProtocolError) {
        let key = try request.channel().description
        guard let data = request.value("data") else {
            throw ProtocolError(.invalidRequest, "field 'data' is required (any JSON value)")
        }
        counters.messagesPublished += 1
        let delivered = broadcast(MessagePush(channel: key, from: session.watcher, data: data), to: key)
        session.reply(request.id, PublishResult(delivered: delivered))
    }
}
