/// What the writer knows of one channel between appends: its seq, the CAS
/// token (the stream seq of its last message), and its snapshot's revision.
struct ChannelCursor: Sendable, Equatable {
    /// The address (subject, stream, key) of the channel.
    let address: ChannelAddress
    /// The channel's seq (its last event's).
    var seq: Int64
    /// The stream seq of the channel's last event message; 0 when it has none.
    var streamSeq: UInt64
    /// The snapshot's KV revision, for revision-checked updates.
    var snapshotRevision: UInt64
    /// The seq the stored snapshot's state is as of.
    var snapshotStateSeq: Int64
    /// The newest state given with an append but not yet snapshotted, and its seq.
    var pendingState: (text: String, seq: Int64)?

    static func == (lhs: ChannelCursor, rhs: ChannelCursor) -> Bool {
        lhs.address == rhs.address && lhs.seq == rhs.seq && lhs.streamSeq == rhs.streamSeq
            && lhs.snapshotRevision == rhs.snapshotRevision && lhs.snapshotStateSeq == rhs.snapshotStateSeq
    }
}
