import Foundation
import NATS
import NATSTestSupport
@testable import OutaTimeCluster
import OutaTimeServer
import Synchronization

/// One `.answer` event.
struct Answer: Sendable {
    let ticket: UInt64
    let result: Result<[UInt8], ClusterFabricFailure>
}

/// A NATSClusterFabric with every event it delivered, split by kind.
final class FabricNode: Sendable {
    let fabric: NATSClusterFabric
    let ownerships = Collector<ClusterOwnership>()
    let answers = Collector<Answer>()
    let requests = Collector<ClusterRequest>()
    let pushes = Collector<ClusterPush>()
    let events = Collector<String>()
    let startedAt = Mutex<ContinuousClock.Instant?>(nil)
    let firstOwnershipAt = Mutex<ContinuousClock.Instant?>(nil)
    /// Answers each request (on the delivery thread) when set; nil: leaves it to the test.
    let responder: (@Sendable (ClusterRequest) -> [UInt8]?)?

    var node: String { fabric.node }

    init(_ node: String, url: String, configure: (inout ClusterFabricOptions) -> Void = { _ in },
         responder: (@Sendable (ClusterRequest) -> [UInt8]?)? = nil) throws {
        var options = ClusterFabricOptions(servers: [url], node: node, replicas: 1)
        options.membership.shrink()
        configure(&options)
        fabric = try NATSClusterFabric(options: options)
        self.responder = responder
    }

    func start() throws {
        startedAt.withLock { $0 = .now }
        let fabric = fabric
        try fabric.start { [self] event in
            switch event {
            case .ownership(let ownership):
                events.add("ownership")
                firstOwnershipAt.withLock { $0 = $0 ?? .now }
                ownerships.add(ownership)
            case .request(let request):
                events.add("request")
                requests.add(request)
                if let responder, let payload = responder(request) { fabric.answer(request.id, payload: payload) }
            case .answer(let ticket, let result):
                events.add("answer")
                answers.add(Answer(ticket: ticket, result: result))
            case .push(let push):
                events.add("push")
                pushes.add(push)
            }
        }
    }

    /// The last ownership event delivered.
    var ownership: ClusterOwnership? { ownerships.snapshot.last }

    /// The answers delivered for `ticket`.
    func answers(for ticket: UInt64) -> [Result<[UInt8], ClusterFabricFailure>] {
        answers.snapshot.filter { $0.ticket == ticket }.map(\.result)
    }
}

/// Every slot owned by exactly one of `nodes`, as each node's last event says, all ready and allowed to own.
func fabricsSettled(_ nodes: [FabricNode]) -> Bool {
    var union = Set<Int>()
    var total = 0
    for node in nodes {
        guard let ownership = node.ownership, ownership.ready, !ownership.fenced, node.fabric.mayOwn else { return false }
        union.formUnion(ownership.owned)
        total += ownership.owned.count
        guard ownership.owners.count == SlotMap.count,
              ownership.owned == Set(ownership.owners.indices.filter { ownership.owners[$0] == node.node }) else { return false }
    }
    return total == SlotMap.count && union == Set(0..<SlotMap.count)
}
