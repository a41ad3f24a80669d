import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import OutaTimeStore

extension Server {
    /// `command`: runs a kind's action on the channel. Read-only actions
    /// reply at once; state-changing ones commit their events (group commit),
    /// broadcast them, and only then reply, so the issuer sees its `event`
    /// before its `reply`.
    func command(_ request: Request, on session: Session) throws(ProtocolError) {
        let name = try request.channel()
        let action = try request.string("action")
        let args = ActionArgs(try request.optionalObject("args") ?? [:])
        guard let access = ChannelState.access(kind: name.kind, action: action) else {
            throw ChannelState.unknownAction(action, kind: name.kind)
        }
        if access == .mutating && session.role < .operate {
            throw ProtocolError(.forbidden,
                "action '\(action)' changes the channel and needs role operate; this connection has role \(session.role.rawValue)")
        }
        if name.kind == .timers && (action == "start" || action == "stop"),
           !subscriptions.isSubscribed(session, to: name.description) {
            throw ProtocolError(.notSubscribed,
                "'\(action)' makes this connection a viewer of a timer: subscribe to '\(name)' first")
        }
        try withDurableChannel(name, request: request, session: session) { [unowned self] (channel: Channel) throws(ProtocolError) in
            let context = ActionContext(now: self.clock.now, session: session.id, actor: session.watcher.name)
            let outcome = try channel.state.perform(action, args, context)
            guard !outcome.events.isEmpty else {
                self.clockChanged(channel)
                session.reply(request.id, outcome.reply)
                return
            }
            self.block(session)
            self.commit(outcome.events, on: channel, at: context.now) { [unowned self] failure in
                self.finishWait(session) { () throws(ProtocolError) in
                    if let failure { throw failure }
                    session.reply(request.id, outcome.reply)
                } onError: { error in
                    session.fail(request.id, error)
                }
            }
        }
    }

    /// Numbers `events` on `channel` (seq + 1 each), stores them with the
    /// channel's new state in one write, and after the commit broadcasts them,
    /// re-plans the channel's clock and calls `then`. The state was already
    /// changed by the caller. Clocks start only after the commit, so no tick
    /// of a trip precedes the event that started it.
    func commit(_ events: [DomainEvent], on channel: Channel, at time: Date,
                then: ((ProtocolError?) -> Void)? = nil) {
        let key = channel.key
        let at = ISOTime.format(time)
        let firstSeq = channel.seq + 1
        var records: [EventRecord] = []
        records.reserveCapacity(events.count)
        for event in events {
            channel.seq += 1
            records.append(EventRecord(channel: key, seq: channel.seq, event: event.name,
                                       data: Self.storedText(event.data), at: at))
        }
        channel.uncommittedBatches += 1
        var stateText: JSONText?
        if storesState(with: channel) {
            let state = channel.state
            stateText = JSONText(deferred: { state.storedText(at: time) })
            channel.storedStateSeq = channel.seq
        }
        let write = StoreWrite.appendEvents(channel: key, seq: channel.seq, state: stateText, events: records)
        submit([write]) { [unowned self] error in
            channel.uncommittedBatches -= 1
            if let error {
                self.reload(channel)
                then?(ProtocolError(.internal, "could not store the events of '\(key)': \(error)"))
            } else {
                self.counters.eventsCommitted += records.count
                // Pushes are built only for a channel that has watchers now
                // (a command's issuer often has none).
                if self.subscriptions.subscriberCount(of: key) > 0 {
                    for (offset, event) in events.enumerated() {
                        self.broadcast(EventPush(channel: key, seq: firstSeq + Int64(offset), event: event.name,
                                                 data: event.data, at: at), to: key)
                    }
                }
                self.clockChanged(channel)
                then?(nil)
            }
            if channel.uncommittedBatches == 0 {
                let waiters = channel.commitWaiters
                channel.commitWaiters = []
                for waiter in waiters { waiter() }
            }
        }
    }

    /// Runs `body` once the channel has no uncommitted events (at once if it
    /// has none), blocking `session` meanwhile.
    func whenCommitted(_ channel: Channel, session: Session, request: Request,
                       _ body: @escaping () throws(ProtocolError) -> Void) throws(ProtocolError) {
        guard channel.uncommittedBatches > 0 else {
            try body()
            return
        }
        block(session)
        channel.commitWaiters.append { [unowned self] in
            self.finishWait(session, body) { error in session.fail(request.id, error) }
        }
    }

    /// Kinds whose state is stored with only every ``stateEveryEvents``-th
    /// commit: their events carry everything `apply` needs (absolute values,
    /// no reading of the clock), so the state after the stored one is
    /// rebuilt exactly from the log on load. Encoding and storing a whole
    /// state with every command was a quarter of the storage thread's work
    /// under the durable-command load (docs/BENCHMARKS.md).
    static let lazyStateKinds: Set<ChannelKind> = [.laps]
    /// At most this many events after the stored state (well under the
    /// 1,000 events of history the contract keeps).
    static let stateEveryEvents: Int64 = 64

    /// New events are appended to the store's unindexed tail and moved into
    /// the indexed log (and pruned to the history limit) every this many
    /// events: see `Store.apply(_:historyLimit:foldEvery:foldLater:)`. A channel may
    /// then hold up to this many events more than the limit, which
    /// `history` does not show (``historyStart(of:)``); readers scan at
    /// most this many tail rows. Measured under 50 clients on 50 channels
    /// (docs/BENCHMARKS.md): 2,048 gave a fold every 0.08 s and a p99 of
    /// 15 ms, 8,192 a fold (about 50 ms) every 0.3 s and a p99 of 3.7 ms.
    static let foldEvery = 8_192

    /// The seq `history` starts after at the earliest: the events before it
    /// may still be on disk (``foldEvery``) but are beyond the history limit.
    func historyStart(of channel: Channel) -> Int64 {
        max(0, channel.seq - Int64(config.historyLimit))
    }

    /// Whether the next commit of `channel` stores its state.
    func storesState(with channel: Channel) -> Bool {
        !Self.lazyStateKinds.contains(channel.name.kind) || channel.seq - channel.storedStateSeq >= Self.stateEveryEvents
    }

    /// A stored channel's state as of its seq: the stored state, plus the
    /// events after it applied in order.
    func restoredState(_ record: ChannelRecord, kind: ChannelKind) throws -> ChannelState {
        var state = try ChannelState(kind: kind, jsonText: record.state)
        guard record.stateSeq < record.seq else { return state }
        let missing = record.seq - record.stateSeq
        let events = try store.history(channel: record.name, after: record.stateSeq, limit: Int(missing))
        guard events.count == Int(missing), events.first?.seq == record.stateSeq + 1, events.last?.seq == record.seq else {
            throw StoreFailure(message: "channel '\(record.name)' is at seq \(record.seq) but its log after the stored state (seq \(record.stateSeq)) has \(events.count) events")
        }
        for event in events {
            let data = try JSONValue.parse(Data(event.data.text.utf8))
            state.apply(DomainEvent(event.event, data), at: ISOTime.parse(event.at) ?? clock.now)
        }
        return state
    }

    /// After a failed commit memory is ahead of storage: take the stored
    /// state and seq back (later batches of this channel fail the seq check
    /// and land here too).
    func reload(_ channel: Channel) {
        do {
            if let record = try store.channel(named: channel.key) {
                channel.state = try restoredState(record, kind: channel.name.kind)
                channel.seq = record.seq
                channel.storedStateSeq = record.stateSeq
            }
        } catch {
            logger.error("reloading a channel failed", metadata: ["channel": "\(channel.key)", "error": "\(error)"])
        }
        clockChanged(channel)
    }

    /// System events (releases, clocks, restarts) with no request waiting.
    func commitSystemEvents(_ events: [DomainEvent], on channel: Channel) {
        guard !events.isEmpty else { return }
        commit(events, on: channel, at: clock.now)
    }

    /// An event's data for the store, encoded on the writer thread.
    static func storedText(_ value: JSONValue) -> JSONText {
        JSONText(deferred: {
            (try? MessageEncoder().text(value)) ?? "null"
        })
    }
}
