/// What cluster mode adds to the server besides storage (docs/CLUSTER.md
/// §4.3–4.4): who owns which channel, requests forwarded between nodes, and
/// the relay of push frames. The server sees nothing of NATS: cluster mode's
/// `NATSClusterFabric` (module `OutaTimeCluster`) implements this, as
/// `JetStreamStore` implements ``DurableStore``.
///
/// Threads: every method may be called from the loop thread and must not
/// block it (a send is queued, never waited for). Everything the fabric
/// learns goes to the `deliver` closure given to ``start(deliver:)``, from
/// the fabric's own threads; the server hops to its loop through its inbox.
///
/// Payloads are opaque bytes: the server chooses their format
/// (``ForwardedRequest``); the fabric only carries them.
public protocol ClusterFabric: AnyObject, Sendable {
    /// This node's name (`--node`).
    var node: String { get }

    /// The slot of `channel` (0 ..< ``ClusterOwnership/owners``.count): a
    /// pure function, the same on every node. Any thread.
    func slot(of channel: String) -> Int

    /// Joins the cluster: membership starts, this node's request subject is
    /// served, and from then on every event goes to `deliver` (the first an
    /// ``ClusterFabricEvent/ownership(_:)``). Throws when NATS cannot be
    /// reached. Called once, before the server listens.
    func start(deliver: @escaping @Sendable (ClusterFabricEvent) -> Void) throws

    /// Waits (blocking the caller) until membership has caught up and
    /// every slot has an owner, at most `timeoutMs` milliseconds; returns
    /// the table then, or nil on timeout. The server calls it once after
    /// ``start(deliver:)``, before it listens, so that its first clients
    /// find the channels served.
    func awaitOwnership(timeoutMs: Int) -> ClusterOwnership?

    /// Whether this node may act as an owner now: its lease is valid at this
    /// instant (a snapshot says what was true when made; this says what is
    /// true now, even after the process was frozen). Checked before each
    /// owner action. Any thread; cheap.
    var mayOwn: Bool { get }

    /// Sends `payload` to node `node`'s request subject. Its answer (or a
    /// failure: timeout, no link) comes back exactly once as
    /// ``ClusterFabricEvent/answer(ticket:_:)`` with this `ticket`, within
    /// about `timeoutMs` milliseconds.
    func send(_ payload: [UInt8], to node: String, ticket: UInt64, timeoutMs: Int)

    /// Answers a request received as ``ClusterFabricEvent/request(_:)``.
    /// At most once per request; a request never answered times out at its
    /// sender.
    func answer(_ request: ClusterRequestID, payload: [UInt8])

    /// Publishes a push of `channel` (its frame body: the exact JSON text
    /// subscribers get, without the length prefix) to every node following
    /// the channel.
    /// `seq`: the event's seq for an `event` push (nil for ticks, presence,
    /// messages); `except`: a session id that must not get it (presence
    /// excludes the joiner). Pushes of one channel published in order by one
    /// node arrive in that order at each follower.
    func publish(channel: String, body: [UInt8], seq: Int64?, except: String?)

    /// Starts receiving `channel`'s pushes (``ClusterFabricEvent/push(_:)``);
    /// idempotent. ``unfollow(_:)`` stops.
    func follow(_ channel: String)
    /// Stops receiving `channel`'s pushes; idempotent.
    func unfollow(_ channel: String)

    /// Leaves the cluster gracefully: hands owned slots over, stops serving.
    /// Bounded; called once, when the server's loop has ended.
    func stop()
}

/// What a ``ClusterFabric`` tells the server.
public enum ClusterFabricEvent: Sendable {
    /// The slot table or this node's lease changed.
    case ownership(ClusterOwnership)
    /// Another node forwarded a request to this one.
    case request(ClusterRequest)
    /// The answer to a ``ClusterFabric/send(_:to:ticket:timeoutMs:)``.
    case answer(ticket: UInt64, Result<[UInt8], ClusterFabricFailure>)
    /// A push frame of a followed channel, published by its owner.
    case push(ClusterPush)
}

/// The slot table as one node sees it.
public struct ClusterOwnership: Sendable, Equatable {
    /// Each slot's owning node (nil: none yet), indexed by slot.
    public var owners: [String?]
    /// The slots this node owns now: empty while fenced.
    public var owned: Set<Int>
    /// True while this node's lease has lapsed (or it re-reads the table
    /// after one): it must not act as the owner of anything.
    public var fenced: Bool
    /// True once membership has caught up and the node is not fenced.
    public var ready: Bool
    /// The nodes taken for alive, sorted.
    public var liveNodes: [String]

    /// A table from its parts.
    public init(owners: [String?], owned: Set<Int>, fenced: Bool, ready: Bool, liveNodes: [String]) {
        self.owners = owners
        self.owned = owned
        self.fenced = fenced
        self.ready = ready
        self.liveNodes = liveNodes
    }
}

/// Identifies a received request for ``ClusterFabric/answer(_:payload:)``
/// (the fabric's reply address).
public struct ClusterRequestID: Sendable, Hashable {
    /// The fabric's own reference (a NATS reply subject).
    public var reference: String
    /// Wraps a reference.
    public init(_ reference: String) { self.reference = reference }
}

/// A request another node forwarded.
public struct ClusterRequest: Sendable {
    /// The sending node's name.
    public var from: String
    /// Where the answer goes.
    public var id: ClusterRequestID
    /// The server's bytes (``ForwardedRequest``).
    public var payload: [UInt8]

    /// A request from its parts.
    public init(from: String, id: ClusterRequestID, payload: [UInt8]) {
        self.from = from
        self.id = id
        self.payload = payload
    }
}

/// A push relayed from a channel's owner.
public struct ClusterPush: Sendable {
    /// The channel (`kind/name`).
    public var channel: String
    /// The frame body (JSON text, no length prefix), exactly as published.
    public var body: [UInt8]
    /// The event's seq, for `event` pushes.
    public var seq: Int64?
    /// A session that must not get the frame.
    public var except: String?
    /// The publishing node.
    public var from: String

    /// A push from its parts.
    public init(channel: String, body: [UInt8], seq: Int64?, except: String?, from: String) {
        self.channel = channel
        self.body = body
        self.seq = seq
        self.except = except
        self.from = from
    }
}

/// Why a forwarded request got no answer.
public enum ClusterFabricFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// No answer within the timeout (the owner may have died, or be slow).
    case timeout(node: String, ms: Int)
    /// The request could not be sent: the NATS link is down (the text says more).
    case unreachable(node: String, String)

    /// One line for error messages.
    public var description: String {
        switch self {
        case .timeout(let node, let ms): "node '\(node)' did not answer within \(ms) ms"
        case .unreachable(let node, let text): "node '\(node)' could not be reached: \(text)"
        }
    }
}
