import Foundation
import Logging
import OutaTimeProtocol
import OutaTimeStore
import UV

/// What a ticket handed to the store was for; its outcome comes back
/// through the loop's inbox (``ServerMessage/committed(_:)``).
enum PendingWrite {
    /// A new channel's creation.
    case creation(Channel)
    /// The channel's oldest batch in flight (``CommitPipeline``).
    case events(Channel)
    /// The server's own values (``Server/recordAlive()``).
    case meta
    /// An idle empty channel forgotten (``Server/forgetIdleChannels(now:)``).
    case drop
}

extension Server {
    /// Hands `writes` to the store (one call per submission, which is one
    /// channel's batch, never one per event); ``storeCommitted(_:)`` gets
    /// the outcome.
    func submit(_ writes: [StoreWrite], for purpose: PendingWrite) {
        nextTicket += 1
        pendingWrites[nextTicket] = purpose
        store.submit(writes, ticket: nextTicket)
    }

    /// Log metadata naming where channels are stored: the backend, and
    /// the file for SQLite.
    var storeMetadata: Logger.Metadata {
        guard case .sqlite = config.storage else { return ["store": "\(store.backendName)"] }
        return ["store": "\(store.backendName)", "db": "\(config.databasePath)"]
    }

    /// The store's outcomes, in submission order: queued behind any not
    /// yet acted on (``reportCommits()``).
    func storeCommitted(_ commits: [StoreCommit]) {
        // One report is one group: its size and time are on every ticket.
        if config.http != nil, let group = commits.first { metrics.recordCommit(group) }
        reportBacklog.append(contentsOf: commits)
    }

    /// Acts on the reported outcomes, oldest first: replies, broadcasts,
    /// clocks. Acting on a large group takes long (one of the 10-watcher
    /// setup's: 227 ms in one callback, while the ticks due waited), so
    /// past the iteration's time (``ServerConfig/readBudgetMicroseconds``,
    /// the same as for reads, counted over every report of the iteration)
    /// the rest waits for the next loop iteration, after the timers due by
    /// then. Nothing reorders: the outcomes are taken in the writer's order,
    /// and later reports queue behind.
    func reportCommits() {
        let limit = UInt64(config.readBudgetMicroseconds) * 1_000
        let started = limit > 0 ? Loop.hrtime : 0
        defer { if limit > 0 { reportTimeThisIteration &+= Loop.hrtime &- started } }
        while let commit = reportBacklog.popFirst() {
            report(commit)
            if limit > 0, !reportBacklog.isEmpty, reportTimeThisIteration &+ (Loop.hrtime &- started) >= limit {
                counters.reportsDeferred += 1
                nextTurn.request()
                break
            }
        }
        if case .draining = phase { checkDrained() }
    }

    private func report(_ commit: StoreCommit) {
        guard let purpose = pendingWrites.removeValue(forKey: commit.ticket) else { return }
        if let failure = commit.error {
            logger.error("store write failed", metadata: ["ticket": "\(commit.ticket)", "error": "\(failure)"])
            storeFailure = failure
            storeFailureReconnects = store.status.link?.reconnects ?? 0
        } else {
            storeFailure = nil
        }
        switch purpose {
        case .creation(let channel): creationCommitted(channel, failure: commit.error)
        case .events(let channel): eventsCommitted(on: channel, failure: commit.error)
        case .meta, .drop: break
        }
    }

    /// Why the store cannot write, for `/healthz`: its link is down, or
    /// its last write failed (and the link has not come back since).
    var storeTrouble: String? {
        let status = store.status
        if let outage = status.outage { return "\(outage): the store cannot write" }
        guard let storeFailure else { return nil }
        if let link = status.link, link.reconnects > storeFailureReconnects { return nil }
        return "the store's last write failed: \(storeFailure)"
    }

    /// Reads durable events off the loop thread (reads run concurrently
    /// with commits: ``DurableStore``); `completion` runs on the loop thread. `through` is
    /// the channel's seq when asked: a later event may already be committed
    /// but not yet reported (nor broadcast), and is not read.
    func readHistory(channel: String, after: Int64, through: Int64, limit: Int,
                     completion: @escaping (Result<[HistoryEvent], StoreFailure>) -> Void) {
        nextTicket += 1
        let ticket = nextTicket
        pendingReads[ticket] = completion
        let store = self.store
        let sender = inbox.sender
        DispatchQueue.global().async {
            let result: Result<[HistoryEvent], StoreFailure>
            do {
                let records = try store.history(channel: channel, after: after, through: through, limit: limit)
                result = .success(try records.map { record in
                    HistoryEvent(seq: record.seq, event: record.event,
                                 data: try JSONValue.parse(Data(record.data.text.utf8)),
                                 at: record.at)
                })
            } catch {
                result = .failure(StoreFailure(error))
            }
            sender.post(.historyRead(ticket: ticket, result))
        }
    }
}
