import NATS
import OutaTimeStore

/// One submission's `appendEvents`, ready to go into a message.
struct AppendBatch: Sendable {
    let seq: Int64
    let state: JSONText?
    let events: [EventRecord]
    var previous: Int64 { seq - Int64(events.count) }
}

extension ChannelCommitter {
    /// Appends `batches` (consecutive, each already validated) of `channel`
    /// as ONE message: the seq check first, then a publish whose CAS is the
    /// channel's previous stream seq and whose Msg-Id is `<channel>:<first seq>`.
    ///
    /// A lost ack is retried with the same Msg-Id and CAS; a CAS refusal
    /// after a lost ack is resolved by reading the subject's last message
    /// (ours: stored; not ours: another writer). A CAS refusal on the first
    /// attempt means another writer: ``StoreError/seqMismatch(channel:expected:stored:)``
    /// with the seq now stored; never a duplicate.
    func append(channel: String, batches: [AppendBatch]) throws(StoreFailure) {
        var cursor = try cursor(channel)
        guard let first = batches.first else { return }
        guard first.previous == cursor.seq else {
            throw .refused(.seqMismatch(channel: channel, expected: first.previous, stored: cursor.seq))
        }
        let events = batches.flatMap(\.events)
        let newSeq = batches.last!.seq
        if let state = batches.last(where: { $0.state != nil }) {
            cursor.pendingState = (state.state!.text, state.seq)
        }
        guard let firstEvent = events.first else {
            // Nothing to publish: a state-only append keeps the seq.
            store(cursor)
            return
        }
        let payload = EventBatchCodec.encode(events)
        let msgID = "\(channel):\(firstEvent.seq)"
        let headers = [EventHeaders.seqFirst: "\(firstEvent.seq)", EventHeaders.seqLast: "\(newSeq)", EventHeaders.writer: writer]
        let options = PublishOptions(msgID: msgID, expectedLastSubjectSequence: cursor.streamSeq == 0 ? .empty : .sequence(cursor.streamSeq))
        let address = cursor.address
        var streamSeq: UInt64?
        var ackLost = false
        /// The subject's newest message is this very message (same Msg-Id, same bytes).
        func isOurs(_ message: NATSMessage?) -> Bool {
            message?.headers[EventHeaders.msgID] == msgID && message?.data == payload
        }
        /// Another writer got there first: refuse, naming the seq it stored.
        func fenced() throws(StoreFailure) -> Never {
            forget(channel)
            let last = try nats { () throws(NATSError) in try jetStream.lastMessage(stream: address.stream, subject: address.subject) }
            let stored = last.flatMap { Int64($0.headers[EventHeaders.seqLast] ?? "") } ?? 0
            throw .refused(.seqMismatch(channel: channel, expected: first.previous, stored: stored))
        }
        attempts: for _ in 0..<publishAttempts {
            // A publish made while the link is down would wait in libnats'
            // buffer for its ack's timeout: fail now, naming the outage.
            if ackLost {
                do throws(StoreFailure) { try requireLink("no ack for '\(msgID)' on '\(address.subject)': the outcome is unknown") } catch {
                    forget(channel)
                    throw error
                }
            } else {
                try requireLink("'\(msgID)' was not sent")
            }
            var acked: PublishAck?
            var refused = false
            do throws(NATSError) {
                acked = try jetStream.publish(address.subject, data: payload, headers: headers, options: options)
            } catch .timeout {
                ackLost = true
                ackRetries.add(1, ordering: .relaxed)
                continue attempts
            } catch .wrongLastSequence {
                refused = true
            } catch {
                forget(channel)
                throw failure(error)
            }
            if refused {
                // After a lost ack, the refusal may be of our own stored message.
                let last = try nats { () throws(NATSError) in try jetStream.lastMessage(stream: address.stream, subject: address.subject) }
                guard ackLost, let last, isOurs(last) else { try fenced() }
                streamSeq = last.streamSequence
                lostAcksResolved.add(1, ordering: .relaxed)
                break attempts
            }
            guard let ack = acked else { continue attempts }
            if ack.duplicate {
                // The Msg-Id (`<channel>:<first seq>`) is already stored. In a
                // cluster the duplicate check runs before the CAS, so another
                // writer's message for the same seqs lands here too: ours
                // only if it holds exactly what we sent.
                let stored = try nats { () throws(NATSError) in try jetStream.message(stream: address.stream, sequence: ack.sequence) }
                guard isOurs(stored) else { try fenced() }
                lostAcksResolved.add(1, ordering: .relaxed)
            }
            streamSeq = ack.sequence
            break attempts
        }
        guard let streamSeq else {
            forget(channel)
            throw .database(code: 0, message: "JetStream: no ack for '\(msgID)' on '\(address.subject)' after \(publishAttempts) attempts: the outcome is unknown")
        }
        countText(payload.count)
        cursor.seq = newSeq
        cursor.streamSeq = streamSeq
        if cursor.seq - cursor.snapshotStateSeq >= snapshotEvery {
            // The events are stored whatever happens here; a failed snapshot
            // stays pending and is tried again at the next append.
            try? writeSnapshot(&cursor)
        }
        store(cursor)
    }

    /// The events must be numbered `previous + 1 ... seq` and belong to `channel`.
    static func validate(_ batch: AppendBatch, channel: String) throws(StoreError) {
        guard batch.previous >= 0 else {
            throw .invalidEvents(channel: channel, reason: "more events than the new seq")
        }
        for (offset, event) in batch.events.enumerated() {
            if event.channel != channel {
                throw .invalidEvents(channel: channel, reason: "event \(event.seq) belongs to '\(event.channel)'")
            }
            if event.seq != batch.previous + 1 + Int64(offset) {
                throw .invalidEvents(
                    channel: channel, reason: "event seq \(event.seq) at position \(offset), expected \(batch.previous + 1 + Int64(offset))")
            }
        }
    }

    /// Writes every pending state as its channel's snapshot (at close).
    func flushSnapshots() {
        for var cursor in allCursors() where cursor.pendingState != nil {
            if (try? writeSnapshot(&cursor)) != nil { store(cursor) }
        }
    }
}
