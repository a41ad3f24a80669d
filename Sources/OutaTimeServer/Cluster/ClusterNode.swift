import DequeModule
import OutaTimeProtocol
import UV

/// A server's cluster-mode state (loop thread only): the slot table as last
/// reported, the requests it forwarded, the channels it relays for its own
/// connections, and, as an owner, the watchers other nodes hold.
final class ClusterNode {
    let fabric: any ClusterFabric
    /// The last table the fabric reported; nil before the first.
    var ownership: ClusterOwnership?
    var nextTicket: UInt64 = 0
    /// Requests sent to an owner and not yet answered, by ticket.
    var forwards: [UInt64: ForwardWait] = [:]
    /// Forwards refused before they were applied (the channel moved, or no
    /// process served the owner), sent again by ``retryTimer``.
    var retries: [ForwardWait] = []
    /// Fires the retries (closed with the server's handles).
    var retryTimer: UV.Timer?
    /// Rejoins sent and not yet answered: ticket → relayed channel.
    var rejoins: [UInt64: String] = [:]
    /// Channels owned elsewhere that this node's connections subscribe to.
    var relays: [String: RelayedChannel] = [:]
    /// As an owner: each channel's watchers on other nodes, by session id.
    var remote: [String: [String: RemoteWatcher]] = [:]
    /// The same, by node: what to drop when a node dies.
    var remoteByNode: [String: Set<RemoteMembership>] = [:]
    /// Channels whose watchers on a node were dropped when it looked dead:
    /// if it shows up alive again, it is told to subscribe them again.
    var droppedByNode: [String: Set<String>] = [:]
    var counters = ClusterCounters()
    /// Owned slots whose channels could not be read yet: tried again from the sweep.
    var slotsToLoad: Set<Int> = []
    /// Channels just found absent from the store by a read that does not
    /// create (a `watch` read), with the loop time: reads right after use
    /// the stand-in instead of reading the store again. Swept after 1 s.
    var absent: [String: UInt64] = [:]

    init(fabric: any ClusterFabric) { self.fabric = fabric }

    /// The owner of `key`'s slot in the last table, if any.
    func owner(of key: String) -> String? {
        guard let ownership else { return nil }
        return ownership.owners[fabric.slot(of: key)]
    }

    /// Whether this node owns `key`'s slot in the last table.
    func owns(_ key: String) -> Bool {
        ownership?.owned.contains(fabric.slot(of: key)) ?? false
    }

    /// The number of watchers other nodes hold on `key`.
    func remoteCount(of key: String) -> Int { remote[key]?.count ?? 0 }
}

/// Counters for `stats` and the tests.
struct ClusterCounters {
    var forwarded = 0
    var forwardFailures = 0
    var forwardedServed = 0
    var relayedPushes = 0
    var relayDuplicates = 0
    var relayGapFills = 0
    var channelsGained = 0
    var channelsDropped = 0
    var remoteWatchersExpired = 0
}

/// A watcher held by another node.
struct RemoteWatcher {
    var watcher: Watcher
    var node: String
}

/// One (channel, session) pair of a remote watcher.
struct RemoteMembership: Hashable {
    var channel: String
    var session: String
}

/// A forwarded request waiting for its answer.
struct ForwardWait {
    let session: Connection
    let slot: ReplySlot
    let id: RequestID?
    let op: ForwardedRequest.Operation
    let channel: String
    var owner: String
    /// What was sent (sent again as is by a retry).
    let payload: [UInt8]
    /// Loop time of the first send: retries stop at the forward timeout.
    let since: UInt64
}

/// A channel owned elsewhere that this node relays to its subscribers:
/// events in seq order without gaps or repeats (design §4.4).
final class RelayedChannel {
    let key: String
    /// The node whose pushes are relayed.
    var owner: String
    /// The last event seq given to the local subscribers; nil until the
    /// first `subscribe` answer says where they start.
    var seq: Int64?
    /// The latest events relayed, for a subscriber whose snapshot is older.
    var recent: Deque<(seq: Int64, frame: Frame)> = []
    /// Events that arrived before ``seq`` was known, or after a gap.
    var pending: [(seq: Int64, frame: Frame)] = []
    /// Work waiting until ``seq`` reaches a value (a subscribe reply, a
    /// command's reply), oldest first, with the loop time it began waiting.
    var held: [(seq: Int64, since: UInt64, run: () -> Void)] = []
    /// A history read fills a gap now.
    var filling = false
    /// Loop time at which to send the rejoins again (the owner had not
    /// taken the channel yet, or did not answer); nil when none is due.
    var rejoinAt: UInt64?

    static let recentLimit = 1024
    static let pendingLimit = 10_000

    init(key: String, owner: String) {
        self.key = key
        self.owner = owner
    }
}
