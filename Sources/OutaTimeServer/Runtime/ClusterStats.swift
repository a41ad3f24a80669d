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
    /// Channels this node owns. Until slot ownership lands, one node owns
    /// every channel it holds: the same count as `channels`.
    var channelsOwned: Int

    enum CodingKeys: String, CodingKey {
        case node, store, nats
        case channelsOwned = "channels_owned"
    }

    /// The figures of `node` from the store's status.
    init(node: String, status: StoreStatus, channelsOwned: Int) {
        self.node = node
        store = status.backend
        nats = status.link.map(NATSLinkStats.init)
        self.channelsOwned = channelsOwned
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
