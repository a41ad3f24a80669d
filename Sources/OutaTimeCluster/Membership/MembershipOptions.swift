import NATS

/// How a ``ClusterMembership`` runs. The defaults are the design's (§4.3);
/// tests shrink the intervals.
public struct MembershipOptions: Sendable {
    /// This node's id: its heartbeat key and the owner name in the table
    /// (letters, digits, `-` and `_`).
    public var node: String
    /// Copies of the two buckets: 1 on one server, 3 in a cluster.
    public var replicas = 1
    /// The heartbeat bucket.
    public var nodesBucket = "OT_NODES"
    /// The slot table bucket.
    public var ownersBucket = "OT_OWNERS"
    /// How often this node puts its heartbeat.
    public var heartbeatInterval: Duration = .milliseconds(250)
    /// Another node is dead when no new heartbeat revision was seen for this long.
    public var deadAfter: Duration = .milliseconds(1500)
    /// This node fences itself when no heartbeat put sent within this long
    /// was acknowledged. Must be less than `deadAfter`: the gap is the
    /// margin for pauses between a put and its ack.
    public var fenceAfter: Duration = .seconds(1)
    /// How long `nodesBucket` keeps a heartbeat (its `MaxAge`, design §4.2:
    /// 10 s): the key of a node that stopped for good goes by itself
    /// instead of staying in the bucket for ever. Liveness never reads it
    /// (it goes by revisions seen, on this node's clock); it only bounds
    /// the bucket. Set when the bucket is created.
    public var nodesMaxAge: Duration = .seconds(10)
    /// The wait for one heartbeat put's ack.
    public var heartbeatTimeout: Duration = .milliseconds(500)
    /// The wait for a claim, handover or bucket call.
    public var operationTimeout: Duration = .seconds(2)
    /// How often the decision thread looks again without being woken
    /// (deaths and the fence are found by the clock, not by an event).
    public var tick: Duration = .milliseconds(50)
    /// Claim staggering, startup grace and rebalancing.
    public var policy = OwnershipPolicy()

    /// The design's defaults for `node`.
    public init(node: String) { self.node = node }

    func validate() throws(MembershipError) {
        guard !node.isEmpty, node.utf8.count <= 64,
              node.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
            throw .invalidOption("node id '\(node)' must be 1 to 64 ASCII letters, digits, '-' or '_'")
        }
        guard fenceAfter < deadAfter else {
            throw .invalidOption("fenceAfter \(fenceAfter) must be less than deadAfter \(deadAfter), or a node could act after others took its slots")
        }
        guard heartbeatInterval > .zero, heartbeatInterval < fenceAfter else {
            throw .invalidOption("heartbeatInterval \(heartbeatInterval) must be positive and less than fenceAfter \(fenceAfter)")
        }
        guard tick > .zero, heartbeatTimeout > .zero, operationTimeout > .zero else {
            throw .invalidOption("tick, heartbeatTimeout and operationTimeout must be positive")
        }
        guard nodesMaxAge >= deadAfter * 2 else {
            throw .invalidOption("nodesMaxAge \(nodesMaxAge) must be at least twice deadAfter \(deadAfter): a live node's heartbeat must never expire")
        }
        guard [1, 3, 5].contains(replicas) else { throw .invalidOption("replicas \(replicas): give 1, 3 or 5") }
    }
}
