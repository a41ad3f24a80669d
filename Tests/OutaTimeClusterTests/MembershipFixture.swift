import Foundation
import NATS
import NATSTestSupport
import OutaTimeCluster
import Synchronization

/// A ClusterMembership on its own connection, with every snapshot it reported and when.
final class Member: Sendable {
    let node: String
    let connection: NATSConnection
    let membership: ClusterMembership
    let reports = Collector<Report>()

    struct Report: Sendable {
        let at: ContinuousClock.Instant
        let snapshot: OwnershipSnapshot
    }

    init(_ node: String, urls: String, configure: (inout MembershipOptions) -> Void = { _ in }) throws {
        self.node = node
        var connectionOptions = try NATSConnectionOptions(urls: urls, name: node)
        connectionOptions.connectTimeout = .seconds(2)
        connection = try NATSConnection(connectionOptions)
        var options = MembershipOptions(node: node)
        configure(&options)
        let reports = reports
        membership = try ClusterMembership(connection: connection, options: options) { snapshot in
            reports.add(Report(at: .now, snapshot: snapshot))
        }
    }

    var snapshot: OwnershipSnapshot { membership.snapshot }

    /// When this member first reported a snapshot matching `condition`, if it did.
    func firstReport(where condition: (OwnershipSnapshot) -> Bool) -> ContinuousClock.Instant? {
        reports.snapshot.first { condition($0.snapshot) }?.at
    }

    func close() {
        membership.abandon()
        connection.close()
    }
}

/// Reads `OT_OWNERS` directly: what the cluster stores, not what a member believes.
final class OwnersReader: Sendable {
    let connection: NATSConnection
    let bucket: KeyValueBucket

    init(urls: String, replicas: Int = 1) throws {
        connection = try NATSConnection(NATSConnectionOptions(urls: urls, name: "owners-reader"))
        var config = KeyValueConfig(bucket: "OT_OWNERS")
        config.replicas = replicas
        bucket = try KeyValueBucket(try JetStream(connection, timeout: .seconds(5)), config: config)
    }

    /// Every slot's stored record (nil: absent or free).
    func table() throws -> [SlotRecord?] {
        try (0..<SlotMap.count).map { slot in
            try bucket.get(SlotMap.key(of: slot)).flatMap { SlotRecord(decoding: $0.value) }
        }
    }

    /// Slots per holder.
    func holders() throws -> [String: Set<Int>] {
        var holders: [String: Set<Int>] = [:]
        for (slot, record) in try table().enumerated() {
            if let node = record?.node { holders[node, default: []].insert(slot) }
        }
        return holders
    }

    func close() { connection.close() }
}

/// Polls `condition` every `every` until it holds or `timeout` passes; returns whether it held.
@discardableResult
func poll(timeout: Duration, every: Duration = .milliseconds(20), _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        Thread.sleep(forTimeInterval: Double(every.components.attoseconds) / 1e18 + Double(every.components.seconds))
    }
}

/// Every slot held by exactly one of `members`, each member's view agreeing
/// with the store.
func settled(_ members: [Member], reader: OwnersReader) throws -> Bool {
    let table = try reader.table()
    guard table.allSatisfy({ $0?.node != nil }) else { return false }
    for member in members {
        let snapshot = member.snapshot
        guard snapshot.ready else { return false }
        let stored = Set(table.indices.filter { table[$0]?.node == member.node })
        guard Set(snapshot.owned.keys) == stored else { return false }
    }
    return Set(table.compactMap { $0?.node }).isSubset(of: Set(members.map(\.node)))
}

extension MembershipOptions {
    /// Intervals shrunk for tests, keeping the design's ratios (fence 4
    /// beats, dead 6 beats, fence margin a third of the dead time).
    mutating func shrink() {
        heartbeatInterval = .milliseconds(150)
        fenceAfter = .milliseconds(600)
        deadAfter = .milliseconds(900)
        heartbeatTimeout = .milliseconds(300)
        policy.claimStagger = .milliseconds(600)
        policy.startupGrace = .milliseconds(300)
    }
}

func milliseconds(_ duration: Duration) -> Int {
    Int(duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
}
