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

    static let allowedList = allCases.map(\.rawValue).joined(separator: ", ")
}

extension Server {
    /// Routes one parsed request. Handlers throw ``ProtocolError`` for a
    /// failure; a handler that waits for storage blocks the session and
    /// replies later.
    func dispatch(_ request: Request, on session: Session) {
        guard let operation = Operation(rawValue: request.type) else {
            session.fail(request.id, ProtocolError(.unknownType,
                "unknown request type '\(request.type)'; valid types: \(Operation.allowedList)"))
            return
        }
        if session.state == .awaitingHello && operation != .hello {
            session.fail(request.id, ProtocolError(.helloRequired,
                "'\(operation.rawValue)' before 'hello': send {\"type\":\"hello\",\"protocol\":1} first"))
            return
        }
        if operation.requiredRole > session.role {
            session.fail(request.id, ProtocolError(.forbidden,
                "'\(operation.rawValue)' needs role \(operation.requiredRole.rawValue) or higher; this connection has role \(session.role.rawValue)"))
            return
        }
        do {
            switch operation {
            case .hello: try hello(request, on: session)
            case .ping: session.reply(request.id, PingResult(time: ISOTime.format(clock.now)))
            case .stats: session.reply(request.id, statsResult())
            case .subscribe: try subscribe(request, on: session)
            case .unsubscribe: try unsubscribe(request, on: session)
            case .get: try get(request, on: session)
            case .list: try list(request, on: session)
            case .history: try history(request, on: session)
            case .publish: try publish(request, on: session)
            case .command: try command(request, on: session)
            }
        } catch {
            session.fail(request.id, error)
        }
    }

    func statsResult() -> StatsResult {
        let writerStats = writer.stats
        return StatsResult(
            server: Self.version,
            uptimeS: Int(Date().timeIntervalSince(startedAt)),
            connections: sessions.count,
            sessionsReady: sessions.values.reduce(0) { $0 + ($1.state == .ready ? 1 : 0) },
            connectionsAccepted: counters.connectionsAccepted,
            channels: channels.values.reduce(0) { $0 + ($1.isDurable ? 1 : 0) },
            subscriptions: subscriptions.count,
            framesIn: counters.framesIn,
            framesOut: counters.framesOut,
            bytesIn: counters.bytesIn,
            bytesOut: counters.bytesOut,
            messagesPublished: counters.messagesPublished,
            deliveries: counters.deliveries,
            eventsCommitted: counters.eventsCommitted,
            storeBatches: writerStats.batchesCommitted,
            storeLargestBatch: writerStats.largestBatch,
            storeBacklog: writer.backlog,
            slowConsumerCloses: counters.slowConsumerCloses,
            ticks: counters.ticks,
            ticksLate: counters.ticksLate,
            tickLatenessMaxMs: counters.tickLatenessMaxMs,
            closes: counters.closesByReason,
            rssBytes: StatsResult.residentBytes()
        )
    }
}
