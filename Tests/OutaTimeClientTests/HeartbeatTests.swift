import OutaTimeTestSupport
import Foundation
import OutaTimeClient
import OutaTimeProtocol
import Testing

/// Heartbeats against a server with a short `heartbeat_ms` (100 ms: it
/// closes connections silent for 200 ms).
@Suite("Heartbeats")
struct HeartbeatTests {
    @Test("pings keep an idle client alive; a client that never pings is closed idle_timeout")
    func idleClient() throws {
        try withTestServer({ $0.heartbeatMs = 100 }) { server in
            try withClientLoop { clients in
                let pinging = clients.connect(port: server.port) { $0.name = "pinging" }
                let silent = clients.connect(port: server.port) {
                    $0.name = "silent"
                    $0.heartbeatIntervalMs = 0
                    $0.reconnect = false
                }
                clients.expect("both ready") { pinging.isReady && silent.isReady }
                #expect(pinging.hello?.heartbeatMs == 100)

                // Idle for ten idle limits.
                clients.run(for: 2)
                #expect(pinging.isReady)
                #expect(pinging.stats.disconnects == 0)
                #expect(pinging.stats.connects == 1)
                #expect(pinging.stats.pingsSent >= 20, "pings: \(pinging.stats.pingsSent)")
                #expect(silent.state == .closed(.bye(.idleTimeout)))

                // Still usable after all that idling.
                var pong: Result<PingResult, ClientError>?
                pinging.send(.ping) { pong = $0 }
                clients.expect("a ping reply") { pong != nil }
                let time = try pong?.get().time
                #expect(time != nil)
            }
        }
    }
}
