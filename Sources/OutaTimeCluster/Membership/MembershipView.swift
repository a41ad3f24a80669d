/// Who is alive, as one node sees it through the `OT_NODES` watch (design
/// §4.3): a node is alive while a new revision of its heartbeat key has
/// been seen within `deadAfter`, on the observer's own monotonic clock.
///
/// Wall-clock stamps in the heartbeat are never compared: only the time
/// this node saw each revision arrive. A node seen once and never again
/// (a stale key at start) is dead `deadAfter` after it was first seen.
public struct MembershipView: Sendable, Equatable {
    /// One node's heartbeat as seen here.
    public struct Heartbeat: Sendable, Equatable {
        /// The last revision seen.
        public var revision: UInt64
        /// When that revision was first seen here.
        public var changedAt: ContinuousClock.Instant
        /// When the node's current run of liveness began here.
        public var aliveSince: ContinuousClock.Instant
        /// True when the key was deleted (a graceful stop): dead at once.
        public var deleted: Bool
    }

    /// How long without a new revision makes a node dead (1.5 s in the design).
    public let deadAfter: Duration
    /// When this view began: a node never seen counts as dead from `started + deadAfter`.
    public let started: ContinuousClock.Instant
    /// The heartbeats seen, by node id.
    public private(set) var heartbeats: [String: Heartbeat] = [:]

    /// An empty view.
    public init(deadAfter: Duration, started: ContinuousClock.Instant) {
        self.deadAfter = deadAfter
        self.started = started
    }

    /// Records that `node`'s heartbeat key has `revision`, seen at `now`.
    /// Returns whether the revision is new.
    @discardableResult
    public mutating func observe(node: String, revision: UInt64, at now: ContinuousClock.Instant) -> Bool {
        if let known = heartbeats[node] {
            guard revision > known.revision else { return false }
            let aliveSince = isAlive(node, at: now) ? known.aliveSince : now
            heartbeats[node] = Heartbeat(revision: revision, changedAt: now, aliveSince: aliveSince, deleted: false)
        } else {
            heartbeats[node] = Heartbeat(revision: revision, changedAt: now, aliveSince: now, deleted: false)
        }
        return true
    }

    /// Records that `node`'s heartbeat key was deleted at `revision`: the
    /// node said it is leaving, so it is dead from `now`.
    public mutating func observeDeleted(node: String, revision: UInt64, at now: ContinuousClock.Instant) {
        guard revision > (heartbeats[node]?.revision ?? 0) else { return }
        heartbeats[node] = Heartbeat(revision: revision, changedAt: now, aliveSince: now, deleted: true)
    }

    /// Gives every node not known to have left a fresh `deadAfter` from
    /// `now`: after this node was blind (fenced, its watches restarted),
    /// silence it could not see is no proof of death.
    public mutating func renew(at now: ContinuousClock.Instant) {
        for (node, heartbeat) in heartbeats where !heartbeat.deleted {
            let aliveSince = isAlive(node, at: now) ? heartbeat.aliveSince : now
            heartbeats[node] = Heartbeat(revision: heartbeat.revision, changedAt: now, aliveSince: aliveSince, deleted: false)
        }
    }

    /// When `node` is (or was) taken for dead.
    public func deathTime(of node: String) -> ContinuousClock.Instant {
        guard let heartbeat = heartbeats[node] else { return started + deadAfter }
        return heartbeat.deleted ? heartbeat.changedAt : heartbeat.changedAt + deadAfter
    }

    /// True when `node`'s heartbeat key was deleted: it said it was leaving.
    public func leftGracefully(_ node: String) -> Bool { heartbeats[node]?.deleted ?? false }

    /// True when `node` is alive at `now`.
    public func isAlive(_ node: String, at now: ContinuousClock.Instant) -> Bool {
        now < deathTime(of: node)
    }

    /// Since when `node` has been alive without a break, or nil if it is dead at `now`.
    public func aliveSince(_ node: String, at now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        guard isAlive(node, at: now), let heartbeat = heartbeats[node] else { return nil }
        return heartbeat.aliveSince
    }

    /// The nodes alive at `now`, sorted.
    public func liveNodes(at now: ContinuousClock.Instant) -> [String] {
        heartbeats.keys.filter { isAlive($0, at: now) }.sorted()
    }
}
