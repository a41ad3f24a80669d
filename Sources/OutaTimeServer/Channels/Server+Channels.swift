import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import OutaTimeStore

/// The channels: loaded at start, created on first use, rebuilt from
/// storage after a failed commit.
extension Server {
    /// Loads every stored channel (its state as of its seq).
    func loadChannels() throws {
        for record in try store.loadChannels() {
            guard let name = try? ChannelName.parse(record.name) else {
                logger.warning("skipping stored channel with an invalid name", metadata: ["channel": "\(record.name)"])
                continue
            }
            channels[record.name] = Channel(
                name: name, state: try restoredState(record, kind: name.kind),
                pipeline: CommitPipeline(storedSeq: record.seq, storedStateSeq: record.stateSeq))
            // Empty channels of an earlier run are forgotten like new ones.
            if record.seq == 0 { idleCandidates[record.name] = time.now }
        }
        // The keyed commands of the kept events (protocol §6.9): one read
        // of a table holding at most `--history-limit` rows per channel.
        var keyed = 0
        for stored in try store.allCommandKeys() {
            guard let channel = channels[stored.channel] else { continue }
            keyed += restoreCommandKeys(CollectionOfOne(stored), into: channel)
        }
        if keyed > 0 { logger.info("command keys loaded", metadata: ["count": "\(keyed)"]) }
        logger.info("channels loaded", metadata: ["count": "\(channels.count)"])
    }

    /// The channel named `name`, created with its kind's initial state on
    /// first reference by `session`. A new channel is usable once its
    /// creation is committed (``CommitPipeline/isDurable``); meanwhile
    /// requests retry. Throws `quota_exceeded` when the session's token
    /// created ``ServerConfig/maxChannelsPerToken`` of the channels held,
    /// `server_busy` when the server holds ``ServerConfig/maxChannels``.
    func openChannel(_ name: ChannelName, for session: Connection) throws(ProtocolError) -> Channel {
        try openChannel(name, creator: session.channelCreator,
                        who: session.credential.map { "token '\($0.name)'" } ?? "this connection")
    }

    /// ``openChannel(_:for:)`` for a creator `who` names in a refusal; a
    /// nil creator (a session of another node, in cluster mode) counts
    /// against no quota.
    func openChannel(_ name: ChannelName, creator: ChannelCreator?, who: String, create: Bool = true) throws(ProtocolError) -> Channel {
        let key = name.description
        if let channel = channels[key] {
            if channel.reloadFailure != nil { try reloadBeforeUse(channel) }
            return channel
        }
        if cluster != nil {
            // Another node may have created it: read the store first (off
            // the loop); requests wait on the placeholder meanwhile.
            return loadPlaceholder(name, creator: creator, who: who, create: create)
        }
        try checkRoomForNewChannel(key, creator: creator, who: who)
        return createChannel(name, creator: creator)
    }

    /// Refuses a new channel over the creator's quota or the server's maximum.
    func checkRoomForNewChannel(_ key: String, creator: ChannelCreator?, who: String) throws(ProtocolError) {
        let quota = config.maxChannelsPerToken
        if let creator, quota > 0, channelQuotas.count(of: creator) >= quota {
            counters.channelsOverQuota += 1
            throw ProtocolError(.quotaExceeded,
                "cannot create channel '\(key)': \(who) created \(quota) of the channels the server holds, "
                    + "its maximum (--max-channels-per-token \(quota)); existing channels can still be used, and "
                    + "channels without events or subscribers are forgotten after \(config.idleChannelMs / 1000) s "
                    + "(--idle-channel-s)")
        }
        guard channels.count < config.maxChannels else {
            counters.channelsRefused += 1
            throw ProtocolError(.serverBusy,
                "cannot create channel '\(key)': the server holds its maximum of \(config.maxChannels) channels "
                    + "(--max-channels); existing channels can still be used, and channels without events or "
                    + "subscribers are forgotten after \(config.idleChannelMs / 1000) s (--idle-channel-s)")
        }
    }

    /// A new channel in its kind's initial state, stored (requests wait
    /// until its creation is committed). `into`: the placeholder it
    /// replaces in cluster mode (the store had no such channel).
    @discardableResult
    func createChannel(_ name: ChannelName, creator: ChannelCreator?, into placeholder: Channel? = nil) -> Channel {
        let key = name.description
        let state = name.kind.initialState(now: clock.now)
        let channel = placeholder ?? Channel(name: name, state: state, pipeline: .creating())
        channel.state = state
        channel.creator = creator
        if let creator { channelQuotas.created(by: creator) }
        channels[key] = channel
        let record = ChannelRecord(name: key, kind: name.kind.rawValue, seq: 0, state: state.jsonText())
        submit([.createChannel(record)], for: .creation(channel))
        return channel
    }

    /// The creation of `channel` is committed, or failed (then the channel
    /// is forgotten and the requests waiting for it fail).
    func creationCommitted(_ channel: Channel, failure: StoreFailure?) {
        var error: ProtocolError?
        if let failure {
            channels[channel.key] = nil
            if let creator = channel.creator { channelQuotas.released(by: creator) }
            error = ProtocolError(.internal, "could not store the new channel \(channel.key): \(failure)")
        } else {
            channel.pipeline.created()
            idleCandidates[channel.key] = time.now
            logger.debug("channel created", metadata: ["channel": "\(channel.key)"])
        }
        for session in channel.takeWaiters() { session.resume(failing: error) }
        for callback in channel.takeSettleCallbacks() { callback(error) }
    }

    /// Notes that `channel` may have become idle and empty (its last
    /// subscriber left): ``forgetIdleChannels(now:)`` checks it later.
    func noteMaybeIdle(_ channel: Channel) {
        if channel.seq == 0 && idleCandidates[channel.key] == nil { idleCandidates[channel.key] = time.now }
    }

    /// Whether `channel` may be forgotten: durable, no event ever, nothing
    /// in flight or waiting, no subscriber, no clock.
    private func isIdleAndEmpty(_ channel: Channel) -> Bool {
        channel.seq == 0 && channel.pipeline.isDurable && channel.pipeline.isSettled && channel.waiters.isEmpty
            && channel.ticks == nil && watcherCount(of: channel.key) == 0 && channel.settleCallbacks.isEmpty
    }

    /// Forgets the channels that have been idle and empty for
    /// ``ServerConfig/idleChannelMs``: out of memory at once, out of the
    /// database by a write that refuses a channel with events. A request
    /// naming one later creates it anew (the writer keeps the order: drop,
    /// then create). Runs from the sweep timer; costs O(candidates).
    func forgetIdleChannels(now: UInt64) {
        guard !idleCandidates.isEmpty else { return }
        let limit = UInt64(config.idleChannelMs)
        var dropped: [StoreWrite] = []
        for (key, since) in idleCandidates {
            guard let channel = channels[key], isIdleAndEmpty(channel) else {
                // Gone, used or watched: noted again when it may be idle.
                idleCandidates[key] = nil
                continue
            }
            guard now >= since + limit else { continue }
            idleCandidates[key] = nil
            channels[key] = nil
            if let creator = channel.creator { channelQuotas.released(by: creator) }
            dropped.append(.dropEmptyChannel(key))
        }
        guard !dropped.isEmpty else { return }
        counters.channelsForgotten += dropped.count
        logger.debug("idle empty channels forgotten", metadata: ["count": "\(dropped.count)"])
        submit(dropped, for: .drop)
    }

    /// A stored channel's state as of its seq: the stored state, plus the
    /// events after it applied in order.
    func restoredState(_ record: ChannelRecord, kind: ChannelKind, events read: [EventRecord]? = nil) throws -> any ChannelBehaviour {
        var state = try kind.decodeState(jsonText: record.state)
        if let stateAt = record.stateAt.flatMap(ISOTime.parse) {
            state.resumeLiveValues(storedAt: stateAt)
        }
        guard record.stateSeq < record.seq else { return state }
        let missing = record.seq - record.stateSeq
        let events = try read ?? store.history(channel: record.name, after: record.stateSeq, through: record.seq,
                                               limit: Int(missing))
        guard events.count == Int(missing), events.first?.seq == record.stateSeq + 1, events.last?.seq == record.seq else {
            throw ReplayError(channel: record.name, seq: record.seq, stateSeq: record.stateSeq, found: events.count)
        }
        for event in events {
            let data = try JSONValue.parse(Data(event.data.text.utf8))
            state.apply(DomainEvent(event.event, data), at: ISOTime.parse(event.at) ?? clock.now)
        }
        return state
    }

    /// After a failed commit memory is ahead of storage: take the stored
    /// state and seq back. The batches still in flight were built on the
    /// state thrown away; the store refuses them (their seqs no longer
    /// follow), and the pipeline does not reload again for them. Returns
    /// the open batch, built on the same state and never to be submitted.
    ///
    /// When the store cannot be read (its link is down: the read fails at
    /// once), memory stays ahead and is marked (``Channel/reloadFailure``):
    /// the channel's next use reloads it first.
    func reload(_ channel: Channel) -> CommitPipeline.Batch? {
        do {
            if let record = try store.channel(named: channel.key) {
                channel.state = try restoredState(record, kind: channel.name.kind)
                channel.reloadFailure = nil
                return channel.pipeline.reload(seq: record.seq, storedStateSeq: record.stateSeq)
            }
        } catch {
            logger.error("reloading a channel failed", metadata: ["channel": "\(channel.key)", "error": "\(error)"])
            channel.reloadFailure = StoreFailure(error)
        }
        return nil
    }

    /// A channel whose reload failed is reloaded before it is used again,
    /// once nothing of it is in flight (a batch still in flight fails and
    /// reloads it itself). While that fails too, requests on it fail
    /// `internal`, naming the cause, rather than show events never stored.
    private func reloadBeforeUse(_ channel: Channel) throws(ProtocolError) {
        guard channel.pipeline.isSettled else { return }
        _ = reload(channel)  // settled: no open batch to give back
        if let failure = channel.reloadFailure {
            throw ProtocolError(.internal, "channel '\(channel.key)' could not be read back from the store after a failed "
                + "write, so its state may show events never stored: \(failure); try again once the store is reachable")
        }
        replanClock(channel, startingTicks: true)
    }

    /// The seq `history` starts after at the earliest: the events before it
    /// may still be stored (SQLite prunes at its folds,
    /// `SQLiteStore.serverFoldEvery`) but are beyond the history limit.
    func historyStart(of channel: Channel) -> Int64 {
        max(0, channel.seq - Int64(config.historyLimit))
    }
}

/// A stored channel whose log does not reach its seq.
struct ReplayError: Error, CustomStringConvertible {
    let channel: String
    let seq: Int64
    let stateSeq: Int64
    let found: Int

    var description: String {
        "channel '\(channel)' is at seq \(seq) but its log after the stored state (seq \(stateSeq)) has \(found) events"
    }
}
