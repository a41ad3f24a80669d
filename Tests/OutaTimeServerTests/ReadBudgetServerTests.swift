import Foundation
import OutaTimeProtocol
import OutaTimeServer
import OutaTimeTestSupport
import Testing

/// `--read-budget-us`: once an iteration's reads have taken that long, the
/// connections still waiting are read in later iterations, first come first
/// served (`UV.ReadBudget`; the order itself is tested in `UVTests`). Here:
/// with 1 µs (one read per iteration) every request of many connections
/// sending at once is still answered, in order, with its effect, and
/// `stats` and `/metrics` count the deferred reads.
@Suite("read budget per loop iteration", .timeLimit(.minutes(2)))
struct ReadBudgetServerTests {
    @Test("connections sending at once are all answered in order; reads_deferred counts the reads put off")
    func everyoneAnsweredInOrder() throws {
        try withTestServer({ $0.readBudgetMicroseconds = 1; $0.http = HTTPEndpoint(port: 0) }) { server in
            let clients = try (0..<6).map { try server.connectReady(name: "sender-\($0)") }
            let observer = try server.connectReady(name: "observer")
            var deferred = 0
            // Each round, every client writes 1,200 requests at once (about
            // 70 KiB: several reads of 16 KiB, so each stays readable over
            // several iterations): pings and adds to its own timer list.
            // Until two clients' requests wait in the same iteration
            // (bounded: the first round nearly always does it).
            for round in 0..<5 where deferred == 0 {
                for (index, client) in clients.enumerated() {
                    try client.sendFrames((0..<1_200).map { n in
                        let id = round * 10_000 + n
                        return n % 3 == 0
                            ? ["type": "command", "id": id, "channel": "timers/budget-\(index)", "action": "add",
                               "args": ["event": "t\(id)", "remaining_s": 60]]
                            : ["type": "ping", "id": id]
                    })
                }
                for client in clients {
                    for n in 0..<1_200 {
                        let reply = try client.readReply(id: round * 10_000 + n)
                        #expect(reply.isOK, "\(describe([reply]))")
                    }
                    #expect(client.pushes.isEmpty, "unexpected frames: \(describe(client.pushes))")
                }
                deferred = try observer.call("stats")[int: "reads_deferred"] ?? 0
            }
            #expect(deferred > 0, "no read was deferred in 5 rounds")
            let metrics = try MetricsTests.scrape(server)
            #expect((metrics["outatime_reads_deferred_total"] ?? 0) >= Double(deferred))
            for index in clients.indices {
                let timers = try observer.call("get", ["channel": "timers/budget-\(index)"])[object: "state"]?["timers"] as? [Any]
                #expect(timers?.count ?? 0 > 0 && (timers?.count ?? 0) % 400 == 0, "timers/budget-\(index): \(timers?.count ?? -1)")
            }
        }
    }

    @Test("--read-budget-us out of range is refused, naming the flag and the range")
    func outOfRange() {
        var config = ServerConfig()
        config.readBudgetMicroseconds = 1_000_001
        #expect(throws: ConfigError.self) { try config.validate() }
        do { try config.validate() } catch {
            #expect(error.message.contains("--read-budget-us 1000001"))
            #expect(error.message.contains("0…1000000"))
        }
    }
}
