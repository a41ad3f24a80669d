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
    @Test("connections sending at once are all answered in order; reads and reports deferred are counted")
    func everyoneAnsweredInOrder() throws {
        try withTestServer({ $0.readBudgetMicroseconds = 1; $0.http = HTTPEndpoint(port: 0) }) { server in
            let clients = try (0..<6).map { try server.connectReady(name: "sender-\($0)") }
            let lists = clients.indices.map { "timers/budget-\($0)" }
            let observer = try server.connectReady(name: "observer")
            for list in lists { try observer.call("subscribe", ["channel": list]) }
            var stats: [String: Any] = [:]
            var rounds = 0
            // Each round, every client writes 1,200 requests at once (about
            // 70 KiB: several reads of 16 KiB, so each stays readable over
            // several iterations): pings and adds to its own timer list.
            // Until two clients' requests waited in the same iteration and
            // a group's outcomes were handled over several (bounded: the
            // first round nearly always does both).
            while rounds < 5, (stats[int: "reads_deferred"] ?? 0) == 0 || (stats[int: "reports_deferred"] ?? 0) == 0 {
                for (index, client) in clients.enumerated() {
                    try client.sendFrames((0..<1_200).map { n in
                        let id = rounds * 10_000 + n
                        return n % 3 == 0
                            ? ["type": "command", "id": id, "channel": lists[index], "action": "add",
                               "args": ["event": "t\(id)", "remaining_s": 60]]
                            : ["type": "ping", "id": id]
                    })
                }
                for client in clients {
                    for n in 0..<1_200 {
                        let reply = try client.readReply(id: rounds * 10_000 + n)
                        #expect(reply.isOK, "\(describe([reply]))")
                    }
                    #expect(client.pushes.isEmpty, "unexpected frames: \(describe(client.pushes))")
                }
                rounds += 1
                stats = try observer.call("stats")
            }
            #expect((stats[int: "reads_deferred"] ?? 0) > 0, "no read was deferred in 5 rounds")
            #expect((stats[int: "reports_deferred"] ?? 0) > 0, "no group was handled over several iterations in 5 rounds")
            let metrics = try MetricsTests.scrape(server)
            #expect((metrics["outatime_reads_deferred_total"] ?? 0) >= Double(stats[int: "reads_deferred"] ?? 0))
            #expect((metrics["outatime_reports_deferred_total"] ?? 0) >= Double(stats[int: "reports_deferred"] ?? 0))

            // The watcher got every add of every list, once, in seq order
            // (`readUntil` takes the events already read first).
            var seqs: [String: [Int]] = [:]
            let expected = rounds * 400
            for _ in 0..<(lists.count * expected) where seqs.values.map(\.count).reduce(0, +) < lists.count * expected {
                let frame = try observer.readUntil(type: "event")
                seqs[frame["channel"] as? String ?? "", default: []].append(frame[int: "seq"] ?? -1)
            }
            for list in lists {
                let got = seqs[list] ?? []
                #expect(got.count == expected && zip(got, got.dropFirst()).allSatisfy { $1 == $0 + 1 },
                        "\(list): \(got.count) events of \(expected), in order: \(zip(got, got.dropFirst()).allSatisfy { $1 == $0 + 1 })")
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
