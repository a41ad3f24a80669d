import Foundation
import OutaTimeStore

/// `stats`' `cluster` object (cluster mode only; snake_case on the wire):
/// this node, its store and its NATS link, and the channels it owns.
struct ClusterStats: Encodable {
    /// The node's name (`--node`).
    var node: String
    /// The store's backend (`jetstream`).
    var store: String
    /// The store's NATS link; absent for a backend without one.
    var nats: NATSLinkStats?
    /// Channels this node owns (and holds in memory).
    var channelsOwned: Int
    /// Slots of the 256 this node owns; absent before the first table.
    var slotsOwned: Int?
    /// True while this node's lease has lapsed: it owns nothing.
    var fenced: Bool?
    /// The nodes this node takes for alive.
    var liveNodes: [String]?
    /// Requests forwarded to owners, and those that failed (timeout, no link).
    var forwarded: Int?
    var forwardFailures: Int?
    /// Forwarded requests this node served as an owner.
    var forwardedServed: Int?
    /// Channels owned elsewhere relayed to this node's subscribers, and
    /// the pushes relayed.
    var relays: Int?
    var relayedPushes: Int?
    /// Event pushes dropped as repeats, and gaps read from the store.
    var relayDuplicates: Int?
    var relayGapFills: Int?
    /// Watchers other nodes hold on this node's channels.
    var remoteWatchers: Int?
    /// Channels loaded on gaining their slot, let go on losing it.
    var channelsGained: Int?
    var channelsDropped: Int?
    /// Up to 1,000 of the channels owned, sorted (to find an owner).
    var ownedChannels: [String]?

    enum CodingKeys: String, CodingKey {
        case node, store, nats, fenced, forwarded, relays
        case channelsOwned = "channels_owned"
        case slotsOwned = "slots_owned"
        case liveNodes = "live_nodes"
        case forwardFailures = "forward_failures"
        case forwardedServed = "forwarded_served"
        case relayedPushes = "relayed_pushes"
        case relayDuplicates = "relay_duplicates"
        case relayGapFills = "relay_gap_fills"
        case remoteWatchers = "remote_watchers"
        case channelsGained = "channels_gained"
        case channelsDropped = "channels_dropped"
        case ownedChannels = "owned_channels"
    }

    /// The figures of `node` from the store's status.
    init(node: String, status: StoreStatus, channelsOwned: Int) {
        self.node = node
        store = status.backend
        nats = status.link.map(NATSLinkStats.init)
        self.channelsOwned = channelsOwned
    }

    /// Adds ownership, forwarding and relay figures.
    mutating func add(_ cluster: ClusterNode, channels: [String]) {
        slotsOwned = cluster.ownership?.owned.count
        fenced = cluster.ownership?.fenced
        liveNodes = cluster.ownership?.liveNodes
        forwarded = cluster.counters.forwarded
        forwardFailures = cluster.counters.forwardFailures
        forwardedServed = cluster.counters.forwardedServed
        relays = cluster.relays.count
        relayedPushes = cluster.counters.relayedPushes
        relayDuplicates = cluster.counters.relayDuplicates
        relayGapFills = cluster.counters.relayGapFills
        remoteWatchers = cluster.remote.values.reduce(0) { $0 + $1.count }
        channelsGained = cluster.counters.channelsGained
        channelsDropped = cluster.counters.channelsDropped
        ownedChannels = Array(channels.sorted().prefix(1000))
    }
}

/// The NATS link in `stats`: `connected`, `url`, `reconnects`, and while
/// down `down_since` and `down_s`; the store's ack counters.
struct NATSLinkStats: Encodable {
    var connected: Bool
    var url: String?
    var reconnects: Int
    var downSince: String?
    var downS: Int?
    var ackRetries: Int
    var lostAcksResolved: Int

    enum CodingKeys: String, CodingKey {
        case connected, url, reconnects
        case downSince = "down_since"
        case downS = "down_s"
        case ackRetries = "ack_retries"
        case lostAcksResolved = "lost_acks_resolved"
    }

    init(_ link: StoreLink) {
        connected = link.connected
        url = link.url
        reconnects = link.reconnects
        downSince = link.downSince.map { ISO8601DateFormatter().string(from: $0) }
        downS = link.downSince.map { max(0, Int(Date().timeIntervalSince($0))) }
        ackRetries = link.ackRetries
        lostAcksResolved = link.lostAcksResolved
    }
}
