import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import OutaTimeStore

extension Server {
    /// Hands `writes` to the group-commit writer; `completion` runs on the
    /// loop thread after the commit (nil) or its failure (the error text).
    func submit(_ writes: [StoreWrite], completion: @escaping (String?) -> Void) {
        nextTicket += 1
        pendingCommits[nextTicket] = completion
        writer.submit(writes, ticket: nextTicket)
    }

    func storeCommitted(_ commits: [StoreCommit]) {
        for commit in commits {
            if let error = commit.error {
                logger.error("store write failed", metadata: ["ticket": "\(commit.ticket)", "error": "\(error)"])
            }
            pendingCommits.removeValue(forKey: commit.ticket)?(commit.error)
        }
        if phase == .draining { checkDrained() }
    }

    /// Reads durable events off the loop thread (the pool reads concurrently
    /// with the writer); `completion` runs on the loop thread.
    func readHistory(channel: String, after: Int64, limit: Int,
                     completion: @escaping (Result<[HistoryEvent], StoreFailure>) -> Void) {
        nextTicket += 1
        let ticket = nextTicket
        pendingReads[ticket] = completion
        let store = self.store
        let sender = inbox.sender
        DispatchQueue.global().async {
            let result: Result<[HistoryEvent], StoreFailure>
            do {
                let records = try store.history(channel: channel, after: after, limit: limit)
                result = .success(try records.map { record in
                    HistoryEvent(seq: record.seq, event: record.event,
                                 data: try JSONValue.parse(Data(record.data.text.utf8)),
                                 at: record.at)
                })
            } catch {
                result = .failure(StoreFailure(message: "\(error)"))
            }
            sender.post(.historyRead(ticket: ticket, result))
        }
    }

    /// Runs `body` with the channel once it is durable, creating it (with its
    /// kind's initial state, committed before use) on first reference. While
    /// the creation commits, the session waits (its later requests too).
    func withDurableChannel(_ name: ChannelName, request: Request, session: Session,
                            _ body: @escaping (Channel) throws(ProtocolError) -> Void) throws(ProtocolError) {
        let key = name.description
        if let channel = channels[key], channel.isDurable {
            try body(channel)
            return
        }
        let channel: Channel
        if let existing = channels[key] {
            channel = existing
        } else {
            let state = ChannelState.initial(kind: name.kind, now: clock.now)
            channel = Channel(name: name, seq: 0, state: state, isDurable: false)
            channels[key] = channel
            let record = ChannelRecord(name: key, kind: name.kind.rawValue, seq: 0, state: state.jsonText())
            submit([.createChannel(record)]) { [unowned self] error in
                self.creationCommitted(channel, error: error)
            }
        }
        block(session)
        channel.creationWaiters.append { [unowned self] failure in
            self.finishWait(session) { () throws(ProtocolError) in
                if let failure { throw failure }
                try body(channel)
            } onError: { error in
                session.fail(request.id, error)
            }
        }
    }

    private func creationCommitted(_ channel: Channel, error: String?) {
        var failure: ProtocolError?
        if let error {
            channels[channel.key] = nil
            failure = ProtocolError(.internal, "could not store the new channel \(channel.key): \(error)")
        } else {
            channel.isDurable = true
            logger.debug("channel created", metadata: ["channel": "\(channel.key)"])
        }
        let waiters = channel.creationWaiters
        channel.creationWaiters = []
        for waiter in waiters { waiter(failure) }
    }

    /// Ends a session's wait for storage: runs `work` if the session is still
    /// open (reporting a thrown error), then resumes its queued requests
    /// unless `work` started another wait.
    func finishWait(_ session: Session, _ work: () throws(ProtocolError) -> Void,
                    onError: (ProtocolError) -> Void) {
        guard session.state == .ready || session.state == .awaitingHello else { return }
        session.isBlocked = false
        do {
            try work()
        } catch {
            onError(error)
        }
        if !session.isBlocked { unblock(session) }
    }
}
