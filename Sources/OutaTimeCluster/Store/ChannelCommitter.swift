import NATS
import OutaTimeStore
import Synchronization

/// Applies writes to JetStream, blocking, on a worker thread (design §4.5):
/// appends as one CAS publish per message, snapshots and creations as KV
/// operations. Holds each channel's ``ChannelCursor``; a cursor is dropped
/// after any failure, so the next write reloads it from the server (the CAS
/// also catches a wrong reload: §2.4).
final class ChannelCommitter: Sendable {
    let jetStream: JetStream
    let snapshots: KeyValueBucket
    let metaBucket: KeyValueBucket
    let partitions: Int
    /// The NATS link's state: a call made while it is down fails at once.
    let link: LinkMonitor
    /// Write a snapshot once the stored one is this many events old (and a state is at hand).
    let snapshotEvery: Int64
    /// Publish attempts when the ack is lost (the same Msg-Id and CAS each time).
    let publishAttempts = 3
    private let cursors = Mutex<[String: ChannelCursor]>([:])
    private let textBytes = Atomic<Int>(0)
    /// Publishes whose ack did not come in time and were sent again.
    let ackRetries = Atomic<Int>(0)
    /// Retried publishes found stored by reading the subject's last message.
    let lostAcksResolved = Atomic<Int>(0)

    /// Who writes (the store's connection name, `outatime-<node>`), in
    /// each event message's `OT-Writer` header: which node wrote what can be
    /// read from the stream (`make cluster-trials` checks a frozen owner's).
    let writer: String

    init(jetStream: JetStream, snapshots: KeyValueBucket, meta: KeyValueBucket, partitions: Int, snapshotEvery: Int64,
         link: LinkMonitor, writer: String) {
        self.writer = writer
        self.jetStream = jetStream
        self.link = link
        self.snapshots = snapshots
        metaBucket = meta
        self.partitions = partitions
        self.snapshotEvery = snapshotEvery
    }

    var textBytesWritten: Int { textBytes.load(ordering: .relaxed) }

    func address(_ channel: String) throws(StoreFailure) -> ChannelAddress {
        do { return try ChannelAddress(channel, partitions: partitions) } catch { throw .refused(error) }
    }

    /// The channel's cursor, loaded from the server on first use: snapshot
    /// plus the subject's last message. Unknown channel: refused.
    func cursor(_ channel: String) throws(StoreFailure) -> ChannelCursor {
        if let known = cursors.withLock({ $0[channel] }) { return known }
        let address = try address(channel)
        let entry = try nats { () throws(NATSError) in try snapshots.get(address.key) }
        guard let entry else { throw .refused(.unknownChannel(channel)) }
        let snapshot: SnapshotRecord
        snapshot = try SnapshotRecord.decode(entry.value, key: address.key)
        var cursor = ChannelCursor(address: address, seq: snapshot.seq, streamSeq: snapshot.streamSeq,
                                   snapshotRevision: entry.revision, snapshotStateSeq: snapshot.stateSeq)
        // Only "no message" means "no events since": an outage throws (§2.4).
        if let last = try nats({ () throws(NATSError) in try jetStream.lastMessage(stream: address.stream, subject: address.subject) }) {
            cursor.streamSeq = last.streamSequence
            cursor.seq = max(cursor.seq, Int64(last.headers[EventHeaders.seqLast] ?? "") ?? 0)
        }
        cursors.withLock { $0[channel] = cursor }
        return cursor
    }

    func store(_ cursor: ChannelCursor) { cursors.withLock { $0[cursor.address.channel] = cursor } }
    func allCursors() -> [ChannelCursor] { cursors.withLock { Array($0.values) } }
    func forget(_ channel: String) { _ = cursors.withLock { $0.removeValue(forKey: channel) } }

    /// Applies one write that is not a mergeable append.
    func apply(_ write: StoreWrite) throws(StoreFailure) {
        switch write {
        case .createChannel(let record):
            let address = try address(record.name)
            let snapshot = SnapshotRecord(seq: record.seq, stateSeq: record.stateSeq, streamSeq: 0, state: record.state, at: SnapshotRecord.now())
            try requireLink()
            do {
                let revision = try snapshots.create(address.key, value: snapshot.encoded())
                textBytes.add(record.state.utf8.count, ordering: .relaxed)
                store(ChannelCursor(address: address, seq: record.seq, streamSeq: 0, snapshotRevision: revision, snapshotStateSeq: record.stateSeq))
            } catch .keyExists {
                // What SQLite reports for the same write: a UNIQUE constraint (SQLITE_CONSTRAINT).
                throw .database(code: 19, message: "channel '\(record.name)' already exists (\(JetStreamStoreNames.snapshotBucket) key '\(address.key)')")
            } catch {
                throw failure(error)
            }
        case .appendEvents(let channel, let seq, let state, let events):
            let batch = AppendBatch(seq: seq, state: state, events: events)
            do throws(StoreError) { try Self.validate(batch, channel: channel) } catch { throw .refused(error) }
            try append(channel: channel, batches: [batch])
        case .saveState(let channel, let state):
            var cursor = try cursor(channel)
            cursor.pendingState = (state.text, cursor.seq)
            do {
                try writeSnapshot(&cursor)
            } catch {
                forget(channel)  // a stale revision: reload before the next write
                throw error
            }
            store(cursor)
        case .setMeta(let key, let value):
            try nats { () throws(NATSError) in _ = try metaBucket.put(JetStreamStoreNames.metaKey(key), value: Array(value.utf8)) }
        case .dropEmptyChannel(let channel):
            let cursor = try cursor(channel)
            guard cursor.seq == 0, cursor.streamSeq == 0 else { throw .refused(.notEmpty(channel: channel, seq: cursor.seq)) }
            try nats { () throws(NATSError) in try snapshots.delete(cursor.address.key) }
            forget(channel)
        }
    }

    /// Writes the cursor's pending state as the snapshot (revision-checked).
    func writeSnapshot(_ cursor: inout ChannelCursor) throws(StoreFailure) {
        guard let pending = cursor.pendingState else { return }
        let snapshot = SnapshotRecord(seq: cursor.seq, stateSeq: pending.seq, streamSeq: cursor.streamSeq, state: pending.text, at: SnapshotRecord.now())
        let revision = try nats { () throws(NATSError) in
            try snapshots.update(cursor.address.key, value: snapshot.encoded(), expectedRevision: cursor.snapshotRevision)
        }
        textBytes.add(pending.text.utf8.count, ordering: .relaxed)
        cursor.snapshotRevision = revision
        cursor.snapshotStateSeq = pending.seq
        cursor.pendingState = nil
    }

    func countText(_ bytes: Int) { textBytes.add(bytes, ordering: .relaxed) }

    /// Runs a NATS call, turning its error into a ``StoreFailure``. While
    /// the link is down it fails at once, naming the outage, without
    /// sending: libnats would queue the call and let it wait out its timeout.
    func nats<T>(_ body: () throws(NATSError) -> T) throws(StoreFailure) -> T {
        try requireLink()
        do { return try body() } catch { throw failure(error) }
    }

    /// Throws, naming the outage, while the NATS link is down.
    func requireLink(_ consequence: String = "nothing was sent") throws(StoreFailure) {
        if let outage = link.outage { throw .database(code: 0, message: "JetStream: \(outage): \(consequence)") }
    }

    /// A NATS failure as the store reports it: the backend's message, code
    /// 0, and the outage when the link is down.
    func failure(_ error: NATSError) -> StoreFailure {
        if let outage = link.outage { return .database(code: 0, message: "JetStream: \(error) (\(outage))") }
        return .database(code: 0, message: "JetStream: \(error)")
    }
}

/// The headers of an event message.
enum EventHeaders {
    static let seqFirst = "OT-Seq-First"
    static let seqLast = "OT-Seq-Last"
    static let msgID = "Nats-Msg-Id"
    static let writer = "OT-Writer"
}
