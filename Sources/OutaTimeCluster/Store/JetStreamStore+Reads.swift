import NATS
import OutaTimeStore

/// Reads: KV gets and direct gets by subject, on the caller's thread.
extension JetStreamStore {
    /// Every channel with a snapshot, ordered by name.
    public func loadChannels() throws(StoreFailure) -> [ChannelRecord] {
        let committer = try reader
        let keys = try committer.nats { () throws(NATSError) in try committer.snapshots.keys() }
        var records: [ChannelRecord] = []
        for name in keys.compactMap(ChannelAddress.channel(fromKey:)) {
            if let record = try channel(named: name) { records.append(record) }
        }
        return records.sorted { $0.name < $1.name }
    }

    /// Every channel's name, from the snapshot bucket's keys alone.
    public func channelNames() throws(StoreFailure) -> [String] {
        let committer = try reader
        let keys = try committer.nats { () throws(NATSError) in try committer.snapshots.keys() }
        return keys.compactMap(ChannelAddress.channel(fromKey:))
    }

    /// One channel, or nil if it was never created (or was dropped): its
    /// snapshot, with the seq of its last event message.
    public func channel(named name: String) throws(StoreFailure) -> ChannelRecord? {
        let committer = try reader
        let address = try committer.address(name)
        guard let (snapshot, _) = try snapshot(address, committer) else { return nil }
        var seq = snapshot.seq
        if let last = try committer.nats({ () throws(NATSError) in
            try committer.jetStream.lastMessage(stream: address.stream, subject: address.subject)
        }) {
            seq = max(seq, Int64(last.headers[EventHeaders.seqLast] ?? "") ?? 0)
        }
        return ChannelRecord(name: name, kind: address.kind, seq: seq, state: snapshot.state,
                             stateSeq: snapshot.stateSeq, stateAt: snapshot.at)
    }

    /// Up to `limit` events with seq in `after + 1 ... through`, oldest first,
    /// read message by message with direct gets (from the snapshot's message
    /// on when `after` is not older than the snapshot's state).
    ///
    /// From the snapshot's message itself, not the one after: appends queued
    /// behind one another go out as one message, so the message a snapshot
    /// names may hold events after the state's seq (a state as of 64 stored
    /// with the message of events 64 and 65: starting after it lost event 65,
    /// found by `make cluster-trials`).
    public func history(channel: String, after: Int64, through: Int64, limit: Int) throws(StoreFailure) -> [EventRecord] {
        guard limit > 0, through > after else { return [] }
        let committer = try reader
        let address = try committer.address(channel)
        var next: UInt64 = 1
        if let (snapshot, _) = try snapshot(address, committer), after >= snapshot.stateSeq {
            next = max(1, snapshot.streamSeq)
        }
        var events: [EventRecord] = []
        while events.count < limit, let message = try committer.nats({ () throws(NATSError) in
            try committer.jetStream.nextMessage(stream: address.stream, subject: address.subject, atOrAfter: next)
        }) {
            next = message.streamSequence + 1
            if let last = Int64(message.headers[EventHeaders.seqLast] ?? ""), last <= after { continue }
            if let first = Int64(message.headers[EventHeaders.seqFirst] ?? ""), first > through { break }
            let decoded: [EventRecord]
            do { decoded = try EventBatchCodec.decode(message.data, channel: channel) } catch {
                throw StoreFailure.database(code: 0, message: "\(address.stream) seq \(message.streamSequence): \(error)")
            }
            for event in decoded where event.seq > after && event.seq <= through && events.count < limit {
                events.append(event)
            }
        }
        return events
    }

    /// The first event of the oldest message still kept, or nil when none.
    public func oldestRetainedSeq(channel: String) throws(StoreFailure) -> Int64? {
        let committer = try reader
        let address = try committer.address(channel)
        let first = try committer.nats { () throws(NATSError) in
            try committer.jetStream.nextMessage(stream: address.stream, subject: address.subject, atOrAfter: 1)
        }
        return first.flatMap { Int64($0.headers[EventHeaders.seqFirst] ?? "") }
    }

    /// One of the server's own values, or nil if never set.
    public func meta(_ key: String) throws(StoreFailure) -> String? {
        let committer = try reader
        return try committer.nats { () throws(NATSError) in
            try committer.metaBucket.get(JetStreamStoreNames.metaKey(key))
        }.map(\.text)
    }

    private func snapshot(_ address: ChannelAddress, _ committer: ChannelCommitter) throws(StoreFailure) -> (SnapshotRecord, UInt64)? {
        guard let entry = try committer.nats({ () throws(NATSError) in try committer.snapshots.get(address.key) }) else { return nil }
        return (try SnapshotRecord.decode(entry.value, key: address.key), entry.revision)
    }
}
