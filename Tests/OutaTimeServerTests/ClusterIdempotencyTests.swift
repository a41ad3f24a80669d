import Foundation
import NATSTestSupport
import OutaTimeTestSupport
import Testing

/// `idempotency_key` in cluster mode (PROTOCOL.md §6.9, §16): the owner
/// remembers keyed commands, whichever node a command and its repeats come
/// through.
@Suite("cluster: idempotency keys", .serialized, .timeLimit(.minutes(3)))
struct ClusterIdempotencyTests {
    @Test("a keyed command forwarded through a non-owner, repeated through the owner and another node: one event, the same seq and result")
    func repeatsAcrossNodes() throws {
        let nats = try NATSServerProcess.start()
        defer { nats.stop() }
        let nodes = try ["n1", "n2"].map { try ClusterNodesTests.Node($0, nats: nats) }
        defer { for node in nodes { node.process.send(signal: SIGTERM); _ = node.process.waitForExit() } }
        try ClusterNodesTests.awaitSettled(nodes)

        let channel = "timers/cluster-retry"
        let creator = try nodes[0].client("Doc")
        try creator.call("subscribe", ["channel": channel])
        let owner = try ClusterNodesTests.owner(of: channel, among: nodes)
        let other = try #require(nodes.first { $0 !== owner })
        let command: [String: Any] = ["channel": channel, "action": "add", "idempotency_key": "cluster-1",
                                      "args": ["event": "Clock tower", "remaining_s": 600]]

        let first = try other.client("Marty").request("command", command)
        #expect(first.isOK && first[int: "seq"] == 1 && first["repeated"] == nil, "\(describe([first]))")
        for node in [owner, other] {
            let repeated = try node.client("Jennifer").request("command", command)
            #expect(repeated.isOK && repeated[int: "seq"] == 1 && repeated["repeated"] as? Bool == true,
                    "through \(node.name): \(describe([repeated]))")
            #expect(jsonEqual(repeated["result"], first["result"]))
        }
        let state = try owner.client("Biff").call("get", ["channel": channel])
        #expect(state[int: "seq"] == 1 && state[object: "state"]?[objects: "timers"]?.count == 1, "\(state)")
        _ = try creator.readUntil(type: "event")
        try creator.call("ping")
        #expect(!creator.pushes.contains { $0.type == "event" }, "one event only: \(describe(creator.pushes))")
    }
}
