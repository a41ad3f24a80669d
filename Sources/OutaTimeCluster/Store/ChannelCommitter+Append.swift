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
        let headers = [EventHeaders.seqFirst: "\(firstEvent.seq)", EventHeaders.seqLast: "\(newSeq)"]
        let options = PublishOptions(msgID: msgID, expectedLastSubjectSequence: cursor.streamSeq == 0 ? .empty : .sequence(cursor.streamSeq))
        let address = cursor.address
        var streamSeq: UInt64?
        var ackLost = false
        attempts: for _ in 0..<publishAttempts {
            do {
                streamSeq = try jetStream.publish(address.subject, data: payload, headers: headers, options: options).sequence
                break attempts
            } catch .timeout {
                ackLost = true
                ackRetries.add(1, ordering: .relaxed)
            } catch .wrongLastSequence {
                forget(channel)
                let last = try nats { () throws(NATSError) in try jetStream.lastMessage(stream: address.stream, subject: address.subject) }
                if ackLost, let last, last.headers[EventHeaders.msgID] == msgID {
                    streamSeq = last.streamSequence  // our lost ack: it was stored
                    lostAcksResolved.add(1, ordering: .relaxed)
                    break attempts
                }
                let stored = last.flatMap { Int64($0.headers[EventHeaders.seqLast] ?? "") } ?? 0
                throw .refused(.seqMismatch(channel: channel, expected: first.previous, stored: stored))
            } catch {
                forget(channel)
                throw Self.failure(error)
            }
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
