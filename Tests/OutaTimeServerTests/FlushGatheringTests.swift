import Foundation
import OutaTimeProtocol
import OutaTimeServer
import OutaTimeTestSupport
import Testing

/// Issue 28, fan-out writes: when a loop iteration read a connection's whole
/// 16 KiB read budget (more input waits), the server puts that iteration's
/// writes to clients off to the next iteration, never two in a row
/// (`Server.flushOrGather()`): a saturating publisher's subscribers get one
/// write per 32 KiB read, not one per 16 KiB. Pinned by the `stats` counter
/// `flushes_gathered` (no wall clock): a burst of several read budgets makes
/// the server gather, every message still arrives, in order, and the
/// publisher's own ping behind the burst is answered.
@Suite("writes gathered over budget-limited iterations", .timeLimit(.minutes(2)))
struct FlushGatheringTests {
    static let channel = "laps/gather"

    @Test("a burst of many read budgets gathers flushes; every message arrives in order")
    func burstGathers() throws {
        try withTestServer { server in
            let subscriber = try server.connectReady(name: "subscriber")
            try subscriber.call("subscribe", ["channel": Self.channel])
            let publisher = try server.connectReady(name: "publisher")
            // 4,000 publishes of about 90 bytes: some 22 read budgets of 16 KiB.
            let count = 4_000
            var bytes: [UInt8] = []
            for n in 1...count {
                bytes += TestClient.framed(try TestClient.body(["type": "publish", "channel": Self.channel, "data": n]))
            }
            bytes += TestClient.framed(try TestClient.body(["type": "ping", "id": 7]))
            try publisher.sendRaw(bytes)
            #expect(try publisher.readReply(id: 7).isOK)
            var received: [Int] = []
            for _ in 1...count {
                received.append(try subscriber.readUntil(type: "message")[int: "data"] ?? -1)
            }
            #expect(received == Array(1...count))
            let stats = try subscriber.call("stats")
            #expect((stats[int: "flushes_gathered"] ?? 0) > 0, "no flush was gathered: \(stats[int: "flushes_gathered"] as Any)")
        }
    }
}
