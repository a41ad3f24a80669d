/// How a subscription (re)gained the channel's state: reported once per
/// `subscribe` reply through ``OutaTimeConnection/onSync``.
public struct ChannelSync: Sendable, Equatable {
    /// How the mirror was brought up to date.
    public enum Method: Sendable, Equatable {
        /// A full state, on the first subscription.
        case snapshot
        /// A full state that replaced the mirror's: the server could not
        /// recover from `since` (events pruned, or the channel is newer).
        case reloaded
        /// Only the missed events, applied to the kept state (`recovered: true`).
        case recovered(events: Int)
    }

    /// The channel, `kind/name`.
    public let channel: String
    /// The seq the mirror had before (nil for a first subscription).
    public let sinceSeq: Int64?
    /// The mirror's seq now.
    public let seq: Int64
    /// How it got there.
    public let method: Method

    /// Creates a sync report.
    public init(channel: String, sinceSeq: Int64?, seq: Int64, method: Method) {
        self.channel = channel
        self.sinceSeq = sinceSeq
        self.seq = seq
        self.method = method
    }
}
