import Foundation
import OutaTimeClient
import OutaTimeProtocol
import Testing
import UV

/// Liveness (issue 27): a dead path is noticed within seconds through
/// probes whose timeout follows the measured RTT, and a reconnect resumes
/// the session (`hello` `resume`) instead of leaving a ghost.
@Suite("Liveness")
struct LivenessTests {
    /// `result` with `resume_key` added.
    static func helloResult(resumeKey: String) -> JSONValue {
        guard case .object(var fields) = ScriptedServer.helloResult() else { return .null }
        fields["resume_key"] = .string(resumeKey)
        return .object(fields)
    }

    @Test("a server that answers hello, then neither reads nor writes, is dropped within seconds, not 2 × heartbeat_ms")
    func silentPeer() throws {
        try withClientLoop { clients in
            let fake = try ScriptedServer(loop: clients.loop)
            defer { fake.close() }
            fake.answerHello { peer in peer.stream.stopReading() }  // heartbeat_ms 15,000
            let connection = clients.connect(port: fake.port) { $0.reconnect = false }
            clients.expect("ready") { connection.isReady }
            let start = Date()
            clients.expect("dropped as unresponsive", timeout: 20) { connection.state == .closed(.unresponsive) }
            let took = Date().timeIntervalSince(start)
            // 1 s of silence, then a probe waiting max(2 s, RTT-derived): about 3 s.
            #expect(took < 8, "took \(took) s; before the probes: 2 × heartbeat_ms = 30 s")
            #expect(connection.stats.pingsSent >= 1)
        }
    }

    @Test("a ping older than the last bytes received is no probe: the silence after them gets a fresh one")
    func stalePingIsNoProbe() throws {
        try withClientLoop { clients in
            let fake = try ScriptedServer(loop: clients.loop)
            defer { fake.close() }
            fake.onRequest = { peer, request in
                switch request["type"] {
                case .string("hello"):
                    fake.reply(ScriptedServer.helloResult(), to: request, on: peer)
                case .string("ping"):
                    // The first ping is never answered, but a push follows it;
                    // then the path dies: nothing read, nothing sent.
                    fake.push(.object(["type": .string("note")]), on: peer)
                    peer.stream.stopReading()
                default:
                    break
                }
            }
            let connection = clients.connect(port: fake.port) {
                $0.reconnect = false
                $0.heartbeatIntervalMs = 300
            }
            clients.expect("ready") { connection.isReady }
            let start = Date()
            clients.expect("dropped as unresponsive", timeout: 20) { connection.state == .closed(.unresponsive) }
            let took = Date().timeIntervalSince(start)
            #expect(took < 8, "took \(took) s; with the old ping standing in as the probe: 2 × heartbeat_ms = 30 s")
        }
    }

    @Test("a quiet server that answers is probed after each silence, kept, and its RTT measured")
    func quietLiveServer() throws {
        try withClientLoop { clients in
            let fake = try ScriptedServer(loop: clients.loop)
            defer { fake.close() }
            fake.onRequest = { peer, request in
                switch request["type"] {
                case .string("hello"): fake.reply(ScriptedServer.helloResult(), to: request, on: peer)
                case .string("ping"): fake.reply(.object(["time": .string("2026-11-28T00:00:00Z")]), to: request, on: peer)
                default: break
                }
            }
            let connection = clients.connect(port: fake.port)
            clients.expect("ready") { connection.isReady }
            clients.run(for: 3.5)
            #expect(connection.isReady)
            #expect(connection.stats.disconnects == 0)
            // Heartbeats alone would be one per 7.5 s.
            #expect(connection.stats.pingsSent >= 2, "pings: \(connection.stats.pingsSent)")
            let rtt = try #require(connection.stats.smoothedRTTMs)
            #expect(rtt >= 0 && rtt < 1_000)
            let last = try #require(connection.lastFrameAtMs)
            #expect(clients.loop.now &- last < 2_000, "the last frame is the last probe's reply")
        }
    }

    @Test("a reconnect sends the last resume_key; bye replaced closes for good, without reconnecting")
    func resumeAndReplaced() throws {
        try withClientLoop { clients in
            let fake = try ScriptedServer(loop: clients.loop)
            defer { fake.close() }
            fake.onRequest = { peer, request in
                guard request["type"] == .string("hello") else { return }
                if fake.peers.count == 1 {
                    fake.reply(Self.helloResult(resumeKey: "first-key"), to: request, on: peer)
                    peer.stream.close()  // the link breaks
                } else {
                    fake.reply(Self.helloResult(resumeKey: "second-key"), to: request, on: peer)
                    fake.push(.object(["type": .string("bye"), "reason": .string("replaced")]), on: peer)
                }
            }
            let connection = clients.connect(port: fake.port) { $0.backoff = BackoffPolicy(initialMs: 10, maxMs: 20) }
            clients.expect("closed by bye replaced") { connection.state == .closed(.bye(.replaced)) }
            let hellos = fake.requests("hello")
            #expect(hellos.count == 2)
            #expect(hellos.first?["resume"] == nil)
            #expect(hellos.last?["resume"] == .string("first-key"))
            #expect(!DisconnectReason.bye(.replaced).isRetryable)
            clients.run(for: 0.3)
            #expect(fake.requests("hello").count == 2, "a replaced connection must not come back and fight")
        }
    }
}
