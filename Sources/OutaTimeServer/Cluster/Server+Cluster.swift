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
                endRelay(relay, becameLocal: true, cluster)
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

    /// Loads the stored channels of `slots`: each with its kind's restart
    /// rules applied as of now (a trip under way is aborted, countdowns
    /// pause, schedules are re-planned), its clock planned.
    private func take(slots: Set<Int>, _ cluster: ClusterNode) {
        let records: [ChannelRecord]
        do {
            records = try store.loadChannels()
        } catch {
            logger.error("loading gained channels failed", metadata: ["error": "\(error)"])
            return
        }
        let time = clock.now
        for record in records where slots.contains(cluster.fabric.slot(of: record.name)) && channels[record.name] == nil {
            guard let name = try? ChannelName.parse(record.name) else { continue }
            let channel: Channel
            do {
                channel = Channel(name: name, state: try restoredState(record, kind: name.kind),
                                  pipeline: CommitPipeline(storedSeq: record.seq, storedStateSeq: record.stateSeq))
            } catch {
                logger.error("loading a gained channel failed", metadata: ["channel": "\(record.name)", "error": "\(error)"])
                continue
            }
            channels[record.name] = channel
            cluster.counters.channelsGained += 1
            // The previous owner ran until about now: its live values stand as of now.
            commitSystemEvents(channel.state.recoverAfterRestart(at: time, aliveUntil: time), on: channel)
            replanClock(channel)
            if record.seq == 0 { idleCandidates[record.name] = loop.now }
        }
    }

    /// Lets a channel go (its slot moved, or this node fenced itself): its
    /// clock stops, waiting requests fail with `unavailable`, its remote
    /// watchers are forgotten (their nodes join the new owner), and this
    /// node's own subscribers are relayed from the new owner.
    private func letGo(_ channel: Channel, _ cluster: ClusterNode) {
        let key = channel.key
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
        for session in channel.takeWaiters() { resume(session, failing: error) }
        for callback in channel.takeSettleCallbacks() { callback() }
        // This node's subscribers stay: relayed from the new owner once
        // there is one (while fenced, none is known yet: "" until then).
        if subscriptions.subscriberCount(of: key) > 0 {
            let owner = cluster.owner(of: key).flatMap { $0 == config.node ? nil : $0 } ?? ""
            let relay = RelayedChannel(key: key, owner: owner)
            relay.seq = channel.pipeline.committedSeq
            cluster.relays[key] = relay
            cluster.fabric.follow(key)
            if !owner.isEmpty { rejoin(relay, cluster) }
        }
    }

    /// Sends `subscribe` again for every local subscriber of the relayed
    /// channel, to its (new) owner, asking for the events after the relay's seq.
    func rejoin(_ relay: RelayedChannel, announce: Bool = false, _ cluster: ClusterNode) {
        guard let subscribers = subscriptions.subscribers(of: relay.key) else { return }
        for session in subscribers.members {
            var fields: [String: JSONValue] = ["type": .string("subscribe"), "channel": .string(relay.key)]
            if let seq = relay.seq { fields["since"] = .int(seq) }
            let header = ForwardedRequest(op: .subscribe, session: session.id, name: session.displayName,
                                          role: session.role, rejoin: true, announce: announce ? true : nil)
            cluster.nextTicket += 1
            cluster.rejoins[cluster.nextTicket] = relay.key
            cluster.fabric.send(header.encoded(with: .object(fields)), to: relay.owner, ticket: cluster.nextTicket,
                                timeoutMs: config.clusterForwardTimeoutMs)
        }
    }

    /// Ends a relay: the channel became this node's (its subscribers get
    /// the events they missed from the store, then its broadcasts), or it
    /// has no local subscriber left.
    func endRelay(_ relay: RelayedChannel, becameLocal: Bool, _ cluster: ClusterNode) {
        cluster.relays[relay.key] = nil
        cluster.fabric.unfollow(relay.key)
        for held in relay.held { held.run() }
        guard becameLocal, let from = relay.seq, let channel = channels[relay.key], channel.seq > from else { return }
        let through = channel.pipeline.committedSeq
        guard through > from else { return }
        readHistory(channel: relay.key, after: from, through: through, limit: Int(through - from)) { [unowned self] result in
            guard case .success(let events) = result, let subscribers = self.subscriptions.subscribers(of: relay.key) else { return }
            for event in events {
                guard let frame = try? self.encoder.frame(EventMessage(channel: relay.key, seq: event.seq, event: event.event,
                                                                         data: event.data, at: event.at)) else { continue }
                for session in subscribers.members { _ = session.queue(frame, limit: self.config.outputLimitBytes) }
            }
        }
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
    func watcherList(of key: String, limit: Int, first: Session? = nil) -> [Watcher] {
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
