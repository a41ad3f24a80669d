import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import OutaTimeStore

/// Cluster mode's ownership (docs/CLUSTER.md §4.3): a node serves the
/// channels of the slots it owns, loads them when it gains a slot (applying
/// each kind's restart rules, as a restarted server does), and lets them go
/// when it loses one; its connections' subscriptions to channels owned
/// elsewhere are relayed (``RelayedChannel``).
extension Server {
    /// A stored channel read for loading, with the events after its state.
    struct LoadedChannel: Sendable {
        let record: ChannelRecord
        let events: [EventRecord]
    }

    /// Everything the fabric reports, on the loop.
    func handle(_ event: ClusterFabricEvent) {
        guard let cluster else { return }
        switch event {
        case .ownership(let ownership): ownershipChanged(ownership, cluster)
        case .request(let request): serveForwarded(request, cluster)
        case .answer(let ticket, let result): forwardAnswered(ticket, result, cluster)
        case .push(let push): relayed(push, cluster)
        }
    }

    /// Whether `key` is served by this node: held in memory, or of a slot
    /// it owns (created or loaded here on first use).
    func servesLocally(_ key: String) -> Bool {
        guard let cluster else { return true }
        return channels[key] != nil || cluster.owns(key)
    }

    private func ownershipChanged(_ ownership: ClusterOwnership, _ cluster: ClusterNode) {
        let previous = cluster.ownership
        cluster.ownership = ownership
        let fabric = cluster.fabric
        // Lost: channels of slots no longer owned (fenced: all of them).
        let lost = channels.values.filter { !ownership.owned.contains(fabric.slot(of: $0.key)) }
        for channel in lost.sorted(by: { $0.key < $1.key }) { letGo(channel, cluster) }
        // Gained: load the stored channels of the new slots.
        let gained = ownership.owned.subtracting(previous?.owned ?? [])
        if !gained.isEmpty { take(slots: gained, cluster) }
        // Relays whose channel is ours now end; those whose owner changed join it again.
        for relay in cluster.relays.values.sorted(by: { $0.key < $1.key }) {
            if ownership.owned.contains(fabric.slot(of: relay.key)) {
                // Ours now: the relay ends when the channel is loaded (``install``).
                continue
            } else if let owner = ownership.owners[fabric.slot(of: relay.key)], owner != relay.owner, owner != config.node {
                relay.owner = owner
                rejoin(relay, cluster)
            }
        }
        // Watchers held by nodes that died leave (no ghosts).
        let live = Set(ownership.liveNodes)
        for node in cluster.remoteByNode.keys.sorted() where !live.contains(node) && node != config.node {
            dropRemoteWatchers(of: node, cluster)
        }
        // A node taken for dead that is alive after all (its heartbeats were
        // late: a starved or paused process) subscribes its watchers again.
        for node in cluster.droppedByNode.keys.sorted() where live.contains(node) {
            let keys = cluster.droppedByNode.removeValue(forKey: node) ?? []
            let header = ForwardedRequest(op: .resync, session: "", name: "", role: .watch,
                                          channels: keys.filter { channels[$0] != nil }.sorted())
            cluster.nextTicket += 1
            cluster.fabric.send(header.encoded(with: nil), to: node, ticket: cluster.nextTicket,
                                timeoutMs: config.clusterForwardTimeoutMs)
        }
        if previous?.owned != ownership.owned || previous?.fenced != ownership.fenced {
            logger.info("cluster ownership", metadata: [
                "owned_slots": "\(ownership.owned.count)", "fenced": "\(ownership.fenced)", "ready": "\(ownership.ready)",
                "live": "\(ownership.liveNodes.joined(separator: ","))", "channels": "\(channels.count)",
            ])
        }
    }

    /// Loads the stored channels of `slots`, read off the loop: each with
    /// its kind's restart rules applied as of then (a trip under way is
    /// aborted, countdowns pause, schedules are re-planned). A failed read
    /// (the stream has no leader for a few seconds after a host loss) is
    /// tried again from the sweep while the slots are still owned.
    func take(slots: Set<Int>, _ cluster: ClusterNode) {
        let fabric = cluster.fabric
        readForLoading({ name in slots.contains(fabric.slot(of: name)) }) { [unowned self] result in
            switch result {
            case .success(let read):
                for channel in read.loaded where cluster.owns(channel.record.name) {
                    if let placeholder = self.channels[channel.record.name] {
                        if placeholder.loading != nil { self.install(channel, into: placeholder, cluster) }
                    } else {
                        self.install(channel, into: nil, cluster)
                    }
                }
                if !read.failed.isEmpty {
                    self.logger.warning("some channels of gained slots could not be read; trying them again", metadata: [
                        "channels": "\(read.failed.count)", "first": "\(read.failed[0].name)", "error": "\(read.failed[0].error)"])
                    cluster.slotsToLoad.formUnion(read.failed.map { fabric.slot(of: $0.name) })
                }
            case .failure(let failure):
                self.logger.warning("loading the channels of gained slots failed; trying again", metadata: [
                    "slots": "\(slots.count)", "error": "\(failure)"])
                cluster.slotsToLoad.formUnion(slots)
            }
        }
    }

    /// A placeholder for a channel of an owned slot that is not in memory:
    /// it is read from the store off the loop; requests wait on it (it is
    /// not durable yet) until it is loaded, or created when the store has
    /// none and `create`.
    func loadPlaceholder(_ name: ChannelName, creator: ChannelCreator?, who: String, create: Bool) -> Channel {
        let key = name.description
        let placeholder = Channel(name: name, state: name.kind.initialState(now: clock.now), pipeline: .creating())
        placeholder.loading = (creator, who, create)
        channels[key] = placeholder
        readForLoading(named: key) { [unowned self] result in
            guard self.channels[key] === placeholder, let cluster = self.cluster, let loading = placeholder.loading else { return }
            switch result {
            case .success(let read):
                if let failed = read.failed.first {
                    self.channels[key] = nil
                    let error = ProtocolError(.unavailable, "channel '\(key)' could not be read from the store: \(failed.error); "
                        + "nothing was changed: retry in a few seconds")
                    for session in placeholder.takeWaiters() { session.resume(failing: error) }
                    for callback in placeholder.takeSettleCallbacks() { callback(error) }
                    return
                }
                if let found = read.loaded.first {
                    self.install(found, into: placeholder, cluster)
                    return
                }
                placeholder.loading = nil
                var refusal: ProtocolError?
                if loading.create {
                    self.channels[key] = nil  // not counted against the maximum it is checked against
                    do throws(ProtocolError) {
                        try self.checkRoomForNewChannel(key, creator: loading.creator, who: loading.who)
                        self.createChannel(name, creator: loading.creator, into: placeholder)
                        return
                    } catch {
                        refusal = error
                    }
                }
                // Not stored, and not to be created (a `watch` read): gone
                // again, and the waiting requests read the stand-in.
                self.channels[key] = nil
                if !loading.create { cluster.absent[key] = self.time.now }
                for session in placeholder.takeWaiters() { session.resume(failing: refusal) }
                for callback in placeholder.takeSettleCallbacks() { callback(refusal) }
            case .failure(let failure):
                self.channels[key] = nil
                let error = ProtocolError(.unavailable, "channel '\(key)' could not be read from the store: \(failure); "
                    + "nothing was changed: retry in a few seconds")
                for session in placeholder.takeWaiters() { session.resume(failing: error) }
                for callback in placeholder.takeSettleCallbacks() { callback(error) }
            }
        }
        return placeholder
    }

    /// Puts a channel read from the store in memory (into its placeholder,
    /// if one waits), applies the restart rules, and ends this node's relay
    /// of it: its subscribers first get the events they had not been
    /// relayed (from the events read with it), then its broadcasts.
    private func install(_ loaded: LoadedChannel, into placeholder: Channel?, _ cluster: ClusterNode) {
        let record = loaded.record
        guard let name = try? ChannelName.parse(record.name) else { return }
        let state: any ChannelBehaviour
        do {
            state = try restoredState(record, kind: name.kind, events: loaded.events)
        } catch {
            logger.error("loading a gained channel failed", metadata: ["channel": "\(record.name)", "error": "\(error)"])
            if let placeholder {
                channels[record.name] = nil
                let failure = ProtocolError(.internal, "channel '\(record.name)' could not be loaded: \(error)")
                for session in placeholder.takeWaiters() { session.resume(failing: failure) }
                for callback in placeholder.takeSettleCallbacks() { callback(failure) }
            }
            return
        }
        let channel = placeholder ?? Channel(name: name, state: state, pipeline: CommitPipeline(storedSeq: record.seq, storedStateSeq: record.stateSeq))
        channel.state = state
        channel.pipeline = CommitPipeline(storedSeq: record.seq, storedStateSeq: record.stateSeq)
        channel.loading = nil
        channels[record.name] = channel
        cluster.counters.channelsGained += 1
        logger.debug("cluster: channel loaded", metadata: ["channel": "\(record.name)", "seq": "\(record.seq)",
                                                           "relay": "\(cluster.relays[record.name]?.seq ?? -1)"])
        if let relay = cluster.relays.removeValue(forKey: record.name) {
            cluster.fabric.unfollow(record.name)
            handOver(relay, to: channel, loaded: loaded)
        }
        // The previous owner ran until about now: its live values stand as of now.
        let time = clock.now
        commitSystemEvents(channel.state.recoverAfterRestart(at: time, aliveUntil: time), on: channel)
        replanClock(channel)
        if record.seq == 0 { idleCandidates[record.name] = self.time.now }
        for session in channel.takeWaiters() { session.resume() }
        for callback in channel.takeSettleCallbacks() { callback(nil) }
    }

    /// The relayed channel is this node's now: its subscribers get the
    /// events after the relay's seq before anything the channel broadcasts.
    private func handOver(_ relay: RelayedChannel, to channel: Channel, loaded: LoadedChannel) {
        defer { for held in relay.held { held.run() } }
        guard let from = relay.seq, from < loaded.record.seq, let subscribers = subscriptions.subscribers(of: relay.key) else { return }
        let missing = loaded.events.filter { $0.seq > from }
        guard missing.count == Int(loaded.record.seq - from) else {
            // Older than the stored state: read them (rare: a relay that far behind).
            queueStoredEvents(of: relay.key, after: from, through: loaded.record.seq, to: Array(subscribers.members))
            return
        }
        for event in missing {
            guard let frame = eventFrame(relay.key, seq: event.seq, event: event.event, data: RawJSON(validJSON: event.data.text),
                                         at: event.at) else { continue }
            for session in subscribers.members { _ = session.queue(frame, limit: config.outputLimitBytes) }
        }
    }

    /// Reads `key`'s events after `after` through `through` from the store
    /// (off the loop) and queues them to `connections`: subscribers behind what
    /// the relay kept.
    func queueStoredEvents(of key: String, after: Int64, through: Int64, to connections: [Connection]) {
        readHistory(channel: key, after: after, through: through, limit: Int(through - after)) { [unowned self] result in
            guard case .success(let events) = result else { return }
            for event in events {
                guard let frame = self.eventFrame(key, seq: event.seq, event: event.event, data: event.data, at: event.at) else { continue }
                for session in connections { _ = session.queue(frame, limit: self.config.outputLimitBytes) }
            }
        }
    }

    /// An `event` push of `key`, encoded (nil if it does not encode).
    func eventFrame<Data: Encodable & Sendable>(_ key: String, seq: Int64, event: String, data: Data, at: String) -> Frame? {
        try? encoder.frame(EventMessage(channel: key, seq: seq, event: event, data: data, at: at))
    }

    /// Stored channels read for loading: those read, and those that could not be.
    struct LoadRead: Sendable {
        var loaded: [LoadedChannel] = []
        var failed: [(name: String, error: String)] = []
    }

    /// Reads stored channels for loading, off the loop: those whose name
    /// `matches`, each with the events after its stored state, each on its
    /// own (one on a stalled stream does not hold back the others).
    func readForLoading(_ matches: @escaping @Sendable (String) -> Bool,
                        completion: @escaping (Result<LoadRead, StoreFailure>) -> Void) {
        readLoading(completion) { store in try store.channelNames().filter(matches).sorted() }
    }

    /// Reads one stored channel for loading (none when absent), off the loop.
    func readForLoading(named name: String, completion: @escaping (Result<LoadRead, StoreFailure>) -> Void) {
        readLoading(completion) { _ in [name] }
    }

    private func readLoading(_ completion: @escaping (Result<LoadRead, StoreFailure>) -> Void,
                             names: @escaping @Sendable (any DurableStore) throws -> [String]) {
        nextTicket += 1
        let ticket = nextTicket
        pendingLoads[ticket] = completion
        let store = self.store
        let sender = inbox.sender
        DispatchQueue.global().async {
            let result: Result<LoadRead, StoreFailure>
            do {
                var read = LoadRead()
                for name in try names(store) {
                    do {
                        guard let record = try store.channel(named: name) else { continue }
                        let missing = record.seq - record.stateSeq
                        let events = missing > 0 ? try store.history(channel: name, after: record.stateSeq, through: record.seq,
                                                                     limit: Int(missing)) : []
                        read.loaded.append(LoadedChannel(record: record, events: events))
                    } catch {
                        read.failed.append((name, "\(error)"))
                    }
                }
                result = .success(read)
            } catch {
                result = .failure(StoreFailure(error))
            }
            sender.post(.channelsLoaded(ticket: ticket, result))
        }
    }

    /// Lets a channel go (its slot moved, or this node fenced itself): its
    /// clock stops, waiting requests fail with `unavailable`, its remote
    /// watchers are forgotten (their nodes join the new owner), and this
    /// node's own subscribers are relayed from the new owner.
    private func letGo(_ channel: Channel, _ cluster: ClusterNode) {
        let key = channel.key
        logger.debug("cluster: channel let go", metadata: ["channel": "\(key)", "seq": "\(channel.pipeline.committedSeq)",
                                                           "owner": "\(cluster.owner(of: key) ?? "-")", "placeholder": "\(channel.loading != nil)"])
        scheduler.cancel(key)
        channels[key] = nil
        idleCandidates[key] = nil
        if let creator = channel.creator { channelQuotas.released(by: creator) }
        cluster.counters.channelsDropped += 1
        if let watchers = cluster.remote.removeValue(forKey: key) {
            for (session, watcher) in watchers {
                cluster.remoteByNode[watcher.node]?.remove(RemoteMembership(channel: key, session: session))
            }
        }
        let error = ProtocolError(.unavailable, "channel '\(key)' moved to another node while this request waited; "
            + "nothing was changed, retry")
        for session in channel.takeWaiters() { session.resume(failing: error) }
        for callback in channel.takeSettleCallbacks() { callback(error) }
        // This node's subscribers stay: relayed from the new owner once
        // there is one (while fenced, none is known yet: "" until then).
        if subscriptions.subscriberCount(of: key) > 0 {
            let owner = cluster.owner(of: key).flatMap { $0 == config.node ? nil : $0 } ?? ""
            if let relay = cluster.relays[key] {
                // A placeholder let go before it was loaded: the relay it was
                // to replace still knows what its subscribers have seen.
                if !owner.isEmpty, owner != relay.owner {
                    relay.owner = owner
                    rejoin(relay, cluster)
                }
            } else if channel.loading == nil {
                let relay = RelayedChannel(key: key, owner: owner)
                relay.seq = channel.pipeline.committedSeq
                cluster.relays[key] = relay
                cluster.fabric.follow(key)
                if !owner.isEmpty { rejoin(relay, cluster) }
            }
        }
    }

    /// Sends `subscribe` again for every local subscriber of the relayed
    /// channel, to its (new) owner, asking for the events after the relay's seq.
    func rejoin(_ relay: RelayedChannel, announce: Bool = false, _ cluster: ClusterNode) {
        guard let subscribers = subscriptions.subscribers(of: relay.key) else { return }
        logger.debug("cluster: rejoining", metadata: ["channel": "\(relay.key)", "owner": "\(relay.owner)",
                                                      "since": "\(relay.seq ?? -1)", "sessions": "\(subscribers.count)"])
        for session in subscribers.members {
            // With an id, or the owner's answer would carry no reply (and so no recovered events).
            var fields: [String: JSONValue] = ["type": .string("subscribe"), "id": .int(0), "channel": .string(relay.key)]
            if let seq = relay.seq { fields["since"] = .int(seq) }
            let header = ForwardedRequest(op: .subscribe, session: session.id, name: session.displayName,
                                          role: session.role, rejoin: true, announce: announce ? true : nil)
            cluster.nextTicket += 1
            cluster.rejoins[cluster.nextTicket] = relay.key
            cluster.fabric.send(header.encoded(with: .object(fields)), to: relay.owner, ticket: cluster.nextTicket,
                                timeoutMs: config.clusterForwardTimeoutMs)
        }
    }

    /// Ends a relay that has no local subscriber left.
    func endRelay(_ relay: RelayedChannel, _ cluster: ClusterNode) {
        cluster.relays[relay.key] = nil
        cluster.fabric.unfollow(relay.key)
        for held in relay.held { held.run() }
    }

    /// A node died: its watchers leave every channel here, at once.
    private func dropRemoteWatchers(of node: String, _ cluster: ClusterNode) {
        guard let memberships = cluster.remoteByNode.removeValue(forKey: node) else { return }
        for membership in memberships.sorted(by: { ($0.channel, $0.session) < ($1.channel, $1.session) }) {
            guard let watcher = cluster.remote[membership.channel]?.removeValue(forKey: membership.session) else { continue }
            if cluster.remote[membership.channel]?.isEmpty == true { cluster.remote[membership.channel] = nil }
            cluster.counters.remoteWatchersExpired += 1
            cluster.droppedByNode[node, default: []].insert(membership.channel)
            broadcastPresence(channel: membership.channel, joined: [], left: [watcher.watcher], except: nil)
            releaseRemote(session: membership.session, from: membership.channel)
        }
        logger.notice("watchers of a dead node left", metadata: ["node": "\(node)", "count": "\(memberships.count)"])
    }

    /// A remote session stopped watching `key`: what it viewed may pause.
    func releaseRemote(session: String, from key: String) {
        guard let channel = channels[key] else { return }
        commitSystemEvents(channel.state.release(session: session, at: clock.now), on: channel)
        replanClock(channel)
        if watcherCount(of: key) == 0 { noteMaybeIdle(channel) }
    }

    /// Whether a read that creates nothing must first look for `key` in
    /// the store: cluster mode, a channel of this node's slots not in
    /// memory, not found absent just now.
    func mustLoadBeforeReading(_ key: String) -> Bool {
        guard let cluster, channels[key] == nil, cluster.owns(key) else { return false }
        return cluster.absent[key] == nil
    }

    /// Whether other nodes hold watchers of `key` (its pushes are relayed).
    @inline(__always)
    func hasRemoteWatchers(_ key: String) -> Bool {
        guard let cluster else { return false }
        return cluster.remote[key] != nil
    }

    /// Every watcher of `key`: this node's subscribers and other nodes'.
    func watcherCount(of key: String) -> Int {
        subscriptions.subscriberCount(of: key) + (cluster?.remoteCount(of: key) ?? 0)
    }

    /// Up to `limit` watchers of `key`, this node's first (`first` leading).
    func watcherList(of key: String, limit: Int, first: Connection? = nil) -> [Watcher] {
        var list = subscriptions.watchers(of: key, limit: limit, first: first)
        if let remote = cluster?.remote[key], list.count < limit {
            for watcher in remote.values.map(\.watcher).sorted(by: { $0.session < $1.session }) where list.count < limit {
                list.append(watcher)
            }
        }
        return list
    }

    /// Publishes a broadcast's frame to the nodes that hold watchers of `key`.
    func relayOut(_ frame: Frame, channel key: String, seq: Int64?, except: String?) {
        guard let cluster else { return }
        cluster.fabric.publish(channel: key, body: Array(frame.body), seq: seq, except: except)
    }

    /// The `unavailable` error for a channel with no reachable owner.
    func noOwner(_ key: String) -> ProtocolError {
        if let cluster, cluster.ownership?.fenced == true || (channels[key] != nil && !cluster.fabric.mayOwn) {
            let link = store.status.outage.map { ": \($0)" } ?? ""
            return ProtocolError(.unavailable, "this node cannot serve channel '\(key)' now: its lease lapsed because it is "
                + "cut off from NATS\(link); nothing was changed: retry in a few seconds (or through another node)")
        }
        return ProtocolError(.unavailable, "channel '\(key)' has no owner node that this node can reach now (a takeover is "
            + "under way, or this node is cut off from NATS); the request was not sent and nothing was changed: retry in a few seconds")
    }
}
