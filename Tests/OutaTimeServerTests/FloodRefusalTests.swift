import Foundation
import OutaTimeProtocol
import OutaTimeServer
import OutaTimeTestSupport
import Testing

/// Issue 28, scope point 8, in small: connections opened at once from one
/// address, far over its limit, that never send `hello`. Each one over the
/// limit must be refused (or closed) soon, not left connected in the
/// client's eyes while the server never heard of it, and a client from
/// another address must be served meanwhile. The full form (20,000
/// connections, figures) is `make flood-trial`.
@Suite("refusing a flood", .timeLimit(.minutes(2)))
struct FloodRefusalTests {
    static let limit = 50
    static let crowd = 1_500
    /// The bound for each refusal, from the crowd's first connect.
    static let answerWithin = 10.0

    @Test("1,500 silent connections at once from 127.0.0.1 over a limit of 50: 1,450 refused within 10 s, 127.0.0.2 served meanwhile")
    func floodIsRefusedWhileAnotherAddressIsServed() throws {
        // A hello timeout beyond the test: the 50 within the limit stay
        // silent, so every answer counted is a refusal.
        try withTestServer({ $0.maxConnectionsPerAddress = Self.limit; $0.helloTimeoutMs = 120_000 }) { server in
            let bystander = try TestClient(port: server.port, source: "127.0.0.2")
            try bystander.hello(name: "bystander")

            let crowd = try SilentCrowd(port: server.port, count: Self.crowd)
            var pings: [Double] = []
            while crowd.answered < Self.crowd - Self.limit,
                  Date().timeIntervalSince(crowd.started) < 2 * Self.answerWithin {
                crowd.collect(seconds: 0.02)
                let sent = Date()
                #expect(try bystander.request("ping").isOK)
                pings.append(Date().timeIntervalSince(sent))
            }
            // A little longer: nothing more may come (the 50 are held).
            crowd.collect(seconds: 0.5)

            let outcomes = crowd.outcomes
            #expect(outcomes["refused"] == Self.crowd - Self.limit, "outcomes: \(outcomes)")
            #expect(outcomes["nothing"] == Self.limit, "outcomes: \(outcomes)")
            #expect(crowd.slowestAnswer < Self.answerWithin, "the last refusal came after \(crowd.slowestAnswer) s")
            // Generous (a debug build on a loaded machine): the issue's
            // figure, p99 < 100 ms, is measured by `make flood-trial`.
            pings.sort()
            let slowest = pings.last ?? 0
            #expect(!pings.isEmpty && slowest < 2, "bystander pings: \(pings.count), slowest \(slowest) s")

            let stats = try bystander.call("stats")
            let refused = stats[object: "connections_refused"]?["max_connections_per_address"] as? NSNumber
            #expect(refused?.intValue == Self.crowd - Self.limit, "stats: \(stats)")
            #expect(stats[int: "connections"] == Self.limit + 1, "stats: \(stats)")
        }
    }
}
