import Foundation
import OutaTimeProtocol
@testable import OutaTimeServer
import OutaTimeTestSupport
import Testing

/// Issue 28, scope point 8, in small: connections opened at once from one
/// address, far over its limit, that never send `hello`. Each one over the
/// limit must be refused (or closed) soon, never left connected in the
/// client's eyes while the server never hears of it, and a client from
/// another address is served meanwhile. The full form (20,000 connections
/// and the figures) is `make flood-trial`.
@Suite("refusing a flood", .timeLimit(.minutes(2)))
struct FloodRefusalTests {
    static let limit = 50
    static let crowd = 1_500
    /// The bound for each refusal, from the crowd's first connect.
    static let answerWithin = 10.0
    /// How long the loop is kept busy while the crowd arrives: what a flood
    /// of 20,000 does to it, made deterministic.
    static let blockMs = 2_000

    /// The kernel's cap on a listen backlog (`net.core.somaxconn`; 4,096 by
    /// default since Linux 5.4, 128 before): the crowd must fit in it.
    static var kernelBacklogCap: Int {
        (try? String(contentsOfFile: "/proc/sys/net/core/somaxconn", encoding: .utf8))
            .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 0
    }

    @Test("1,500 silent connections at once from 127.0.0.1 over a limit of 50 while the loop is busy: all wait in the listen queue, 1,450 are refused within 10 s, 127.0.0.2 is served",
          .enabled(if: kernelBacklogCap >= crowd, "net.core.somaxconn is below \(crowd)"))
    func floodIsHeldAndRefused() throws {
        // A hello timeout beyond the test: the 50 within the limit stay
        // silent, so every answer counted is a refusal.
        try withTestServer({ $0.maxConnectionsPerAddress = Self.limit; $0.helloTimeoutMs = 120_000 }) { server in
            let bystander = try TestClient(port: server.port, source: "127.0.0.2")
            try bystander.hello(name: "bystander")

            let blocked = OneShot<Void>()
            let unblocked = OneShot<Bool>()
            let handle = server.handle
            Thread { unblocked.set(handle.blockLoop(milliseconds: Self.blockMs, started: blocked)) }.start()
            blocked.wait()
            let crowd = try SilentCrowd(port: server.port, count: Self.crowd)
            // Every handshake completes although nothing is accepted yet:
            // the kernel holds the whole crowd. With libuv's customary
            // backlog of 511 it held 512 and dropped the other SYNs, whose
            // clients then waited for retransmissions (seconds) — and under
            // a longer flood, SYN cookies left clients connected that the
            // server never heard of (5,074 of 20,000 on b68ea8a).
            var waited = 0
            while crowd.connected < Self.crowd, waited < 50 {
                usleep(10_000)
                waited += 1
            }
            #expect(crowd.connected == Self.crowd, "connected while the server was busy: \(crowd.connected) of \(Self.crowd)")
            #expect(unblocked.wait() == true)

            var pings: [Double] = []
            while crowd.answered < Self.crowd - Self.limit,
                  Date().timeIntervalSince(crowd.started) < 2 * Self.answerWithin {
                crowd.collect(seconds: 0.02)
                let sent = Date()
                #expect(try bystander.request("ping").isOK)
                pings.append(Date().timeIntervalSince(sent))
            }
            crowd.collect(seconds: 0.2)  // nothing more may come: the 50 are held

            let outcomes = crowd.outcomes
            #expect(outcomes["refused"] == Self.crowd - Self.limit, "outcomes: \(outcomes)")
            #expect(outcomes["nothing"] == Self.limit, "outcomes: \(outcomes)")
            #expect(crowd.slowestAnswer < Self.answerWithin, "the last refusal came after \(crowd.slowestAnswer) s")
            // Generous (a debug build on a loaded machine): the issue's
            // figure, p99 < 100 ms, is measured by `make flood-trial`.
            let slowest = pings.max() ?? 0
            #expect(!pings.isEmpty && slowest < 2, "bystander pings: \(pings.count), slowest \(slowest) s")

            let stats = try bystander.call("stats")
            let refused = stats[object: "connections_refused"]?["max_connections_per_address"] as? NSNumber
            #expect(refused?.intValue == Self.crowd - Self.limit, "stats: \(stats)")
            #expect(stats[int: "connections"] == Self.limit + 1, "stats: \(stats)")
        }
    }
}
