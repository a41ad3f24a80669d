import NATS

/// A slot's owner as the table says.
public struct SlotOwner: Sendable, Equatable {
    /// The owning node's id.
    public var node: String
    /// The slot's epoch under this owner.
    public var epoch: UInt64

    /// An owner from its fields.
    public init(node: String, epoch: UInt64) {
        self.node = node
        self.epoch = epoch
    }
}

/// What ``ClusterMembership`` reports on every change: the routing table,
/// what this node owns, and whether it may act as an owner at all.
public struct OwnershipSnapshot: Sendable, Equatable {
    /// This node's id.
    public var node: String
    /// Every slot's owner (nil: free), indexed by slot; routing uses it even while fenced.
    public var table: [SlotOwner?]
    /// The slots this node owns, with their epochs: empty while fenced or not yet ready.
    public var owned: [Int: UInt64]
    /// True while this node's lease has lapsed (its heartbeat went
    /// unacknowledged for `fenceAfter`) or it is re-reading the table after one:
    /// it must not act as the owner of anything.
    public var fenced: Bool
    /// True once both watches have caught up, the first heartbeat was
    /// acknowledged, and the node is not fenced.
    public var ready: Bool
    /// The nodes this node takes for alive, sorted (itself included when not fenced).
    public var liveNodes: [String]

    /// The owner of `channel`'s slot, if any.
    public func owner(of channel: String) -> SlotOwner? { table[SlotMap.slot(of: channel)] }
}

/// Counters of one member's writes, for tests and metrics.
public struct MembershipStats: Sendable, Equatable {
    /// Claims stored.
    public var claimsWon = 0
    /// Claims refused by the revision check (another node got there first).
    public var claimsLost = 0
    /// Handovers stored (rebalancing and graceful stop).
    public var handovers = 0
    /// Times this node fenced itself.
    public var fences = 0
    /// Times its own heartbeats stopped coming back through its nodes
    /// watch for deadAfter (a stalled watch): re-read as after a fence.
    public var staleWatches = 0
    /// Heartbeat puts that failed or timed out.
    public var heartbeatFailures = 0
}

/// Why a ``ClusterMembership`` could not start.
public enum MembershipError: Error, Sendable, Equatable, CustomStringConvertible {
    /// An option is out of range; the text says which and what is allowed.
    case invalidOption(String)
    /// A NATS call failed (opening the buckets, the first heartbeat, a watch).
    case nats(NATSError)

    /// One line saying what failed.
    public var description: String {
        switch self {
        case .invalidOption(let text): "cluster membership: \(text)"
        case .nats(let error): "cluster membership: \(error)"
        }
    }
}
