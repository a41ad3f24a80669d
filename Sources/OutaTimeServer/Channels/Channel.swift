import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import OutaTimeStore

/// One channel on the loop thread: its state, its way to storage and its
/// clock. The state's kind is opaque here: every rule comes from its
/// ``ChannelBehaviour``.
final class Channel {
    let name: ChannelName
    /// `name` as text, the key in every index.
    let key: String
    /// The authoritative state. While commits are in flight it runs ahead of
    /// storage; snapshots wait until ``CommitPipeline/isSettled``.
    var state: any ChannelBehaviour
    /// Seq numbering, the batches in flight, storage of the state.
    var pipeline: CommitPipeline
    /// The tick series running now, if any.
    var ticks: TickProgress?
    /// How late its recent ticks were (`stats`' `slowest_channels`).
    var tickLateness = TickLatenessWindow()
    /// Sessions whose parked request runs again when the channel is ready
    /// (created, or its commits done).
    var waiters: [Connection] = []
    /// Forwarded requests (cluster mode) that run again when the channel is
    /// ready, as ``waiters`` do.
    var settleCallbacks: [(ProtocolError?) -> Void] = []
    /// Cluster mode: a placeholder while the channel is read from the
    /// store; `create` says whether it is created if the store has none.
    var loading: (creator: ChannelCreator?, who: String, create: Bool)?
    /// Whose quota the channel counts against (``ChannelQuotas``); nil for
    /// a channel loaded at start.
    var creator: ChannelCreator?
    /// Why memory could not be taken back from storage after a failed
    /// commit (the store was unreachable): the state may show events that
    /// were never stored, so it is reloaded before its next use
    /// (``Server/openChannel(_:for:)``). Nil when memory follows storage.
    /// Typed like every failure across the store boundary; a stored state
    /// the kind cannot decode is a `.database` failure with the decoder's
    /// message.
    var reloadFailure: StoreFailure?
    /// The keyed commands remembered for their repeats (protocol §6.9).
    var commandKeys = CommandKeys()

    init(name: ChannelName, state: any ChannelBehaviour, pipeline: CommitPipeline) {
        self.name = name
        self.key = name.description
        self.state = state
        self.pipeline = pipeline
    }

    /// The durable events applied so far (contract §4).
    var seq: Int64 { pipeline.seq }

    /// Hands the waiting forwarded requests over (to run again).
    func takeSettleCallbacks() -> [(ProtocolError?) -> Void] {
        defer { settleCallbacks = [] }
        return settleCallbacks
    }

    /// Hands the waiting connections over (to be resumed).
    func takeWaiters() -> [Connection] {
        defer { waiters = [] }
        return waiters
    }
}

/// A running tick series: tick k is due at `base + k × interval` (loop
/// milliseconds), so late ticks never shift later ones.
struct TickProgress {
    /// Loop time of tick 0.
    let base: UInt64
    /// Ticks played so far.
    var done: UInt64 = 0

    /// The loop time tick `k` is due.
    func due(_ k: UInt64, every interval: UInt64) -> UInt64 { base + k * interval }
}
