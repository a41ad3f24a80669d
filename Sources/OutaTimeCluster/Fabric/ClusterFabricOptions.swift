import NATS

/// How a ``NATSClusterFabric`` connects and runs. The defaults are the
/// design's (docs/CLUSTER.md §4.3–4.4); tests shrink ``membership``'s
/// intervals.
public struct ClusterFabricOptions: Sendable {
    /// The NATS servers, `nats://host:port` each; libnats picks among them
    /// and fails over.
    public var servers: [String]
    /// This node's name: its request subject `ot.node.<node>.req`, its
    /// reply subjects `ot.reply.<node>.<ticket>`, its heartbeat key and the
    /// owner name in the slot table.
    public var node: String
    /// Copies of the membership buckets: 1 on one server, 3 in a cluster.
    public var replicas: Int
    /// Membership timing and bucket names. Its `node` and `replicas` are
    /// replaced by the two above when the fabric is made.
    public var membership: MembershipOptions
    /// Bound on connecting to one server.
    public var connectTimeout: Duration = .seconds(2)
    /// How often libnats pings the server; two unanswered pings mark the
    /// link down (a frozen server keeps its socket open: only the pings
    /// reveal it). While the link is down a ``NATSClusterFabric/send(_:to:ticket:timeoutMs:)``
    /// fails at once with `unreachable`.
    public var pingInterval: Duration = .seconds(1)

    /// Options for `node` on `servers`, with the design's membership defaults.
    public init(servers: [String], node: String, replicas: Int = 3) {
        self.servers = servers
        self.node = node
        self.replicas = replicas
        membership = MembershipOptions(node: node)
    }

    /// Options from the settings `outatime-server --cluster` parsed.
    public init(settings: ClusterSettings) {
        self.init(servers: settings.servers, node: settings.node, replicas: settings.replicas)
    }

    /// The membership options with this node and replica count.
    var effectiveMembership: MembershipOptions {
        var options = membership
        options.node = node
        options.replicas = replicas
        return options
    }
}

/// Counters of one fabric, for tests and metrics. Read with
/// ``NATSClusterFabric/stats``.
public struct ClusterFabricStats: Sendable, Equatable {
    /// Sends accepted (each gets one answer).
    public var sends = 0
    /// Sends answered by the other node.
    public var answered = 0
    /// Sends that timed out.
    public var timeouts = 0
    /// Sends that failed at once (link down, stopped, publish failed).
    public var unreachable = 0
    /// Replies that came after their send had been answered (late after a
    /// timeout), dropped.
    public var lateReplies = 0
    /// "No responders" notices from NATS (nobody serves the node's
    /// subject): dropped, the send times out.
    public var noResponders = 0
    /// Requests received from other nodes.
    public var requests = 0
    /// Answers that could not be published (dropped: the sender times out).
    public var answerFailures = 0
    /// Pushes published.
    public var pushesPublished = 0
    /// Pushes that could not be published (bad channel name, link closed).
    public var pushFailures = 0
    /// Pushes received on followed channels.
    public var pushesReceived = 0
    /// Follows whose subscription could not be made.
    public var followFailures = 0
}
