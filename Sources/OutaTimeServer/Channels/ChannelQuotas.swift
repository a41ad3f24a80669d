/// Whose channel creations count together against
/// ``ServerConfig/maxChannelsPerToken``.
enum ChannelCreator: Hashable {
    /// A tokens-file entry, over all the connections that present it.
    case token(AccessKey)
    /// One connection, when the server has no tokens (``Connection/serial``).
    case connection(Int)
}

/// How many of the channels the server holds each creator created (loop
/// thread only). A channel counts from its creation until it is gone:
/// forgotten idle and empty, or its creation failed. A creator's entry
/// goes when its count reaches 0, and a connection's when it closes (its
/// channels stay, counted against nobody). Kept in memory only: after a
/// restart the stored channels count against nobody.
struct ChannelQuotas {
    private var held: [ChannelCreator: Int] = [:]

    /// The channels `creator` created that the server holds.
    func count(of creator: ChannelCreator) -> Int { held[creator] ?? 0 }

    /// Creators with something counted.
    var creators: Int { held.count }

    /// Counts a channel `creator` created.
    mutating func created(by creator: ChannelCreator) {
        held[creator, default: 0] += 1
    }

    /// A channel `creator` created is gone.
    mutating func released(by creator: ChannelCreator) {
        guard let count = held[creator] else { return }
        held[creator] = count > 1 ? count - 1 : nil
    }

    /// A connection closed: its count is not needed any more.
    mutating func forget(connection serial: Int) {
        held[.connection(serial)] = nil
    }
}
