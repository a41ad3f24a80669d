import Foundation
import OutaTimeProtocol

/// The operations of the contract (§3), with the role each needs.
enum Operation: String, CaseIterable {
    case hello, ping, subscribe, unsubscribe, get, list, history, command, publish, stats

    /// The lowest role allowed (per action for `command`, checked later).
    var requiredRole: Role {
        switch self {
        // `command` is checked per action (read-only actions need only watch).
        case .publish: .operate
        default: .watch
        }
    }

    /// How it travels to a channel's owner in cluster mode; nil for
    /// operations that name no channel.
    var forwarded: ForwardedRequest.Operation? {
        switch self {
        case .subscribe: .subscribe
        case .unsubscribe: .unsubscribe
        case .get: .get
        case .history: .history
        case .command: .command
        case .publish: .publish
        case .hello, .ping, .list, .stats: nil
        }
    }

    static let allowedList = allCases.map(\.rawValue).joined(separator: ", ")

    /// The operation named `name`, by one hash lookup: `init(rawValue:)`
    /// compares the name with each case in turn (about 800 instructions a
    /// request under callgrind).
    static func named(_ name: String) -> Operation? { byName[name] }

    private static let byName = Dictionary(uniqueKeysWithValues: allCases.map { ($0.rawValue, $0) })
}

/// What a request handler did with its request.
enum Handled {
    /// Answered: the reply is queued in request order (or none was due).
    case replied
    /// Its reply waits for the commit of its events; the connection's next
    /// requests run meanwhile (pipelining).
    case pending
    /// It cannot run until `channel` is ready (created, or its commits
    /// done): it runs again then, the connection's later requests behind it.
    case retry(Channel)
    /// Its reply (at the slot) comes from a read off the loop; the
    /// connection's later requests wait for it.
    case reading(ReplySlot)
}

extension Server {
    /// Routes one parsed request. Handlers throw ``ProtocolError`` for a
    /// failure and otherwise say what they did (``Handled``).
    func dispatch(_ request: Request, on session: Connection) -> Handled {
        guard let operation = Operation.named(request.type) else {
            session.fail(request.id, ProtocolError(.unknownType,
                "unknown request type '\(request.type)'; valid types: \(Operation.allowedList)"))
            return .replied
        }
        if case .awaitingHello = session.state, operation != .hello {
            session.fail(request.id, ProtocolError(.helloRequired,
                "'\(operation.rawValue)' before 'hello': send {\"type\":\"hello\",\"protocol\":1} first"))
            return .replied
        }
        if operation.requiredRole > session.role {
            session.fail(request.id, ProtocolError(.forbidden,
                "'\(operation.rawValue)' needs role \(operation.requiredRole.rawValue) or higher; this connection has role \(session.role.rawValue)"))
            return .replied
        }
        do {
            if let cluster, let forwarded = operation.forwarded,
               let handled = try routeToOwner(forwarded, request, on: session, cluster) {
                return handled
            }
            switch operation {
            case .hello: return try hello(request, on: session)
            case .ping:
                session.reply(request.id, PingResult(time: ISOTime.format(clock.now)))
                return .replied
            case .stats: return try stats(request, on: session)
            case .subscribe: return try subscribe(request, on: session)
            case .unsubscribe: return try unsubscribe(request, on: session)
            case .get: return try get(request, on: session)
            case .list: return try list(request, on: session)
            case .history: return try history(request, on: session)
            case .publish: return try publish(request, on: session)
            case .command: return try command(request, on: session)
            }
        } catch {
            session.fail(request.id, error)
            return .replied
        }
    }

    /// The counters; `slowest_channels` from the channels of `scope`, or
    /// empty without one (`/metrics` names no channel, so it skips the scan).
    func statsResult(slowestIn scope: ChannelScope? = nil) -> StatsResult {
        let writerStats = store.stats
        let durableChannels = channels.values.reduce(0) { $0 + ($1.pipeline.isDurable ? 1 : 0) }
        return StatsResult(
            server: Self.version,
            uptimeS: Int(Date().timeIntervalSince(startedAt)),
            connections: connections.count,
            sessionsReady: connections.values.reduce(0) { if case .ready = $1.state { $0 + 1 } else { $0 } },
            connectionsAccepted: counters.connectionsAccepted,
            channels: durableChannels,
            subscriptions: subscriptions.count,
            framesIn: counters.framesIn,
            framesOut: counters.framesOut,
            bytesIn: counters.bytesIn,
            bytesOut: counters.bytesOut,
            messagesPublished: counters.messagesPublished,
            deliveries: counters.deliveries,
            eventsCommitted: counters.eventsCommitted,
            commands: counters.commands,
            storeBatches: writerStats.batchesCommitted,
            storeLargestBatch: writerStats.largestBatch,
            storeBacklog: store.backlog,
            storeCommitUs: Int(writerStats.commitNanoseconds / 1000),
            storeTextBytes: store.textBytesWritten,
            slowConsumerCloses: counters.slowConsumerCloses,
            ticks: counters.ticks,
            ticksLate: counters.ticksLate,
            ticksConflated: counters.ticksConflated,
            messagesDropped: counters.messagesDropped,
            readsDeferred: loop.deferredReads,
            reportsDeferred: counters.reportsDeferred,
            tickLatenessMaxMs: counters.tickLatenessMaxMs,
            tickLatenessTotalMs: counters.tickLatenessTotalMs,
            slowestChannels: scope.map(slowestChannels(in:)) ?? [],
            closes: counters.closesByReason,
            connectionsRefused: counters.connectionsRefused,
            acceptErrors: counters.acceptErrors,
            maxConnections: config.maxConnections,
            maxConnectionsPerAddress: config.maxConnectionsPerAddress,
            channelsRefused: counters.channelsRefused,
            channelsOverQuota: counters.channelsOverQuota,
            maxChannelsPerToken: config.maxChannelsPerToken,
            channelsForgotten: counters.channelsForgotten,
            maxChannels: config.maxChannels,
            channelItemsRefused: counters.channelItemsRefused,
            maxChannelItems: config.maxChannelItems,
            http: config.http == nil ? nil : [
                "requests": counters.httpRequests, "refused_heads": counters.httpRefusedHeads,
                "refused_connections": counters.httpRefused, "accept_pauses": counters.httpAcceptPauses,
                "timeouts": counters.httpTimeouts, "refused_per_address": counters.httpRefusedPerAddress,
                "open": httpConnections.count,
                "websocket_upgrades": counters.webSocketUpgrades, "websocket_refused": counters.webSocketRefused,
                "websocket_open": counters.webSocketOpen, "websocket_encodes": counters.webSocketEncodes,
            ],
            hellosFailed: counters.hellosFailed,
            hellosThrottled: counters.hellosThrottled,
            proxyHeadersRefused: counters.proxyHeadersRefused,
            maxFailedHellos: config.maxFailedHellos,
            requestRatePauses: counters.requestRatePauses,
            maxRequestsPerSecond: config.maxRequestsPerSecond,
            rssBytes: StatsResult.residentBytes(),
            cluster: config.node.map { node in
                var stats = ClusterStats(node: node, status: store.status, channelsOwned: durableChannels)
                if let cluster { stats.add(cluster, channels: channels.values.filter(\.pipeline.isDurable).map(\.key)) }
                return stats
            }
        )
    }
}
