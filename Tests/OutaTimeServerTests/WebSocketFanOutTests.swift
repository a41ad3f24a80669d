import OutaTimeTestSupport
import Foundation
import OutaTimeProtocol
import OutaTimeServer
import Testing

/// Broadcasts to WebSocket subscribers (PROTOCOL.md "WebSocket transport"):
/// each frame is encoded as a WebSocket message once, however many
/// WebSocket connections it goes to; the same output queue and limits as
/// TCP: a WebSocket client that stops reading gets `bye slow_consumer`
/// (then Close 1008) ahead of its queue, while another keeps its ticks.
@Suite("WebSocket fan-out", .timeLimit(.minutes(5)))
struct WebSocketFanOutTests {
    @Test("a broadcast is encoded as a WebSocket message once for all WebSocket subscribers, never for TCP alone")
    func encodeOnce() throws {
        try withTestServer({ $0.http = HTTPEndpoint(port: 0) }) { server in
            let channel = "timers/encode-once"
            let webs = try (0..<3).map { _ in try WebSocketTestClient(port: server.httpPort) }
            for web in webs {
                try web.hello()
                try web.call("subscribe", ["channel": channel])
            }
            let tcpWatcher = try server.connectReady(name: "tcp watcher")
            try tcpWatcher.call("subscribe", ["channel": "timers/tcp-only"])
            let publisher = try server.connectReady(name: "publisher")
            func encodes() throws -> Int {
                try #require(try publisher.call("stats")[object: "http"]?[int: "websocket_encodes"])
            }
            // Presence pushes for the subscriptions above may still be on their way.
            for web in webs { _ = try web.call("ping") }
            let before = try encodes()
            for n in 0..<10 { try publisher.call("publish", ["channel": channel, "data": ["n": n]]) }
            for web in webs {
                for n in 0..<10 {
                    let message = try web.readUntil(type: "message")
                    #expect((message["data"] as? [String: Any])?[int: "n"] == n, "\(message)")
                }
            }
            #expect(try encodes() - before == 10, "ten messages to three WebSocket subscribers: ten encodings")
            // A channel with TCP subscribers only costs no WebSocket encoding.
            let tcpOnly = try encodes()
            for n in 0..<10 { try publisher.call("publish", ["channel": "timers/tcp-only", "data": ["n": n]]) }
            _ = try tcpWatcher.readUntil(type: "message")
            #expect(try encodes() == tcpOnly)
        }
    }

    @Test("a WebSocket client that stops reading gets bye slow_consumer and Close 1008 ahead of its queue; another keeps its ticks")
    func slowConsumer() throws {
        let bound = try SlowConsumerByeTests.byteBound()
        try withTestServer({
            SlowConsumerByeTests.configure(&$0)
            $0.http = HTTPEndpoint(port: 0)
            $0.lapTickMs = 20
            // The slow client's closed window must not end it first (ETIMEDOUT
            // after 8 s of a flood on a loaded machine): this is about the queue.
            $0.tcpUserTimeoutMs = 0
        }) { server in
            let (_, socket) = try WebSocketTestClient.handshake(port: server.httpPort, receiveBuffer: 16_384)
            let slow = WebSocketTestClient(socket: socket)
            try slow.hello(name: "slowpoke")
            for board in SlowConsumerByeTests.boards { try slow.call("subscribe", ["channel": board]) }
            let watcher = try WebSocketTestClient(port: server.httpPort)
            try watcher.hello(name: "wall")
            try watcher.call("subscribe", ["channel": "laps/ticking"])
            let publisher = try server.connectReady(name: SlowConsumerByeTests.wide)
            try publisher.call("command", ["channel": "laps/ticking", "action": "start"])

            try SlowConsumerByeTests.flood(publisher)

            let read = slow.bytesRead
            var reason: String?
            for _ in 0..<30_000 where reason == nil {
                let message = try slow.readMessage(timeout: 30)
                if message.type == "bye" { reason = message["reason"] as? String }
            }
            #expect(reason == "slow_consumer")
            #expect(slow.bytesRead - read < bound, "read \(slow.bytesRead - read) bytes before the bye (bound \(bound))")
            let close = try slow.readClose()
            #expect(close.code == 1008 && close.reason == "slow_consumer", "\(close)")
            #expect(slow.socket.expectClosed())

            // The watcher was never closed: it reads its (conflated) ticks and newer ones keep coming.
            let first = try watcher.readUntil(type: "tick", timeout: 30)
            #expect(first["channel"] as? String == "laps/ticking")
            try watcher.call("ping")
            _ = try watcher.readUntil(type: "tick", timeout: 30)
            let stats = try publisher.call("stats")
            #expect(stats[int: "slow_consumer_closes"] == 1, "\(describe([stats]))")
            #expect(!watcher.transcript.contains { $0.type == "bye" })
        }
    }
}
