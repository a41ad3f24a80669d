import OutaTimeTestSupport
import Foundation
import OutaTimeProtocol
import Testing
@testable import OutaTimeServer

/// Idle and hello timeouts: some with short settings, some with realistic
/// ones passed by moving the server's clock forward
/// (``ServerHandle/advanceClock(milliseconds:)``) instead of sleeping.
@Suite("timeouts", .timeLimit(.minutes(3)))
struct TimeoutTests {
    @Test("a silent client gets bye idle_timeout and is closed after 2 × heartbeat, not before")
    func idleTimeout() throws {
        try withTestServer({ $0.heartbeatMs = 30_000 }) { server in
            let client = try server.connectReady()
            // Just short of 2 × 30 s of silence (the server's clock; the
            // real time since hello only adds to it, far below a second).
            #expect(server.handle.advanceClock(milliseconds: 58_000))
            #expect(throws: (any Error).self, "closed before 2 × heartbeat") { try client.readFrame(timeout: 0.2) }
            #expect(server.handle.advanceClock(milliseconds: 2_000))
            let bye = try client.readUntil(type: "bye", timeout: 5)
            #expect(bye["reason"] as? String == "idle_timeout")
            #expect(server.handle.advanceClock(milliseconds: server.config.lingerMs + 1))
            #expect(client.expectClosed(), "still open after bye; seen: \(describe(client.transcript))")
            #expect(client.pushes.isEmpty, "unexpected frames: \(describe(client.pushes))")
        }
    }

    @Test("a client that pings every 100 ms is not closed")
    func pingingKeepsAlive() throws {
        try withTestServer({ $0.heartbeatMs = 200 }) { server in
            let client = try server.connectReady()
            let start = Date()
            var pings = 0
            while Date().timeIntervalSince(start) < 1.0 && pings < 50 {
                let reply = try client.request("ping")
                #expect(reply.isOK)
                pings += 1
                usleep(100_000)
            }
            #expect(pings >= 5)
            #expect(try client.request("ping").isOK)
            #expect(!client.pushes.contains { $0.type == "bye" }, "got: \(describe(client.pushes))")
        }
    }

    @Test("any frame counts as activity, even a bad_json one")
    func badJSONCountsAsActivity() throws {
        try withTestServer({ $0.heartbeatMs = 200 }) { server in
            let client = try server.connectReady()
            for _ in 0..<8 {
                try client.sendFrameBody(Data("{oops".utf8))
                #expect(try client.readFrame().errorCode == .badJSON)
                usleep(100_000)
            }
            #expect(try client.request("ping").isOK)
            #expect(!client.pushes.contains { $0.type == "bye" })
        }
    }

    @Test("bytes of a frame that never ends are not activity: trickled a byte every 100 ms, it is timed out")
    func trickledFrameTimesOut() throws {
        try withTestServer({ $0.heartbeatMs = 200 }) { server in
            let client = try server.connectReady()
            try client.sendRaw([0, 0, 0, 100])  // a 100-byte frame, then a byte at a time
            var sent = 0
            var bye: [String: Any]?
            while bye == nil, sent < 40 {
                try client.sendRaw([UInt8(ascii: " ")])
                sent += 1
                bye = try? client.readFrame(timeout: 0.1)  // nothing else is sent to it
            }
            #expect(bye?["reason"] as? String == "idle_timeout", "after \(sent) bytes: \(bye.map { describe([$0]) } ?? "none")")
            #expect(sent < 30, "kept open for \(sent) bytes of one frame")
        }
    }

    @Test("a subscribed but silent client is also timed out, and its watchers told")
    func idleSubscriberLeaves() throws {
        try withTestServer({ $0.heartbeatMs = 200 }) { server in
            let silent = try server.connectReady(name: "sleepy")
            try silent.call("subscribe", ["channel": "laps/idle"])
            let observer = try server.connectReady(name: "observer")
            try observer.call("subscribe", ["channel": "laps/idle"])
            // The observer keeps pinging while the other one goes quiet.
            var left: [String: Any]?
            let deadline = Date().addingTimeInterval(5)
            while left == nil && Date() < deadline {
                try observer.request("ping")
                left = observer.pushes.first { $0.type == "presence" && !$0.sessions("left").isEmpty }
                usleep(50_000)
            }
            #expect(left?.sessions("left") == [silent.session ?? "?"])
            #expect(try silent.readUntil(type: "bye")["reason"] as? String == "idle_timeout")
            #expect(silent.expectClosed())
        }
    }

    @Test("a connection without hello gets bye hello_timeout and is closed, not before the timeout")
    func helloTimeout() throws {
        try withTestServer({ $0.helloTimeoutMs = 10_000; $0.heartbeatMs = 600_000 }) { server in
            let client = try server.connect()
            // Answered `hello_required`: the server has the connection (its
            // hello deadline runs from the accept).
            try client.sendFrame(["type": "ping", "id": 1])
            #expect(try client.readFrame().errorCode == .helloRequired)
            #expect(server.handle.advanceClock(milliseconds: 9_000))
            try client.sendFrame(["type": "ping", "id": 2])
            #expect(try client.readFrame().errorCode == .helloRequired, "closed before the hello timeout")
            #expect(server.handle.advanceClock(milliseconds: 1_000))
            let bye = try client.readUntil(type: "bye", timeout: 5)
            #expect(bye["reason"] as? String == "hello_timeout")
            // The linger after a bye (waiting for the peer to close first)
            // passes on the server's clock too.
            #expect(server.handle.advanceClock(milliseconds: server.config.lingerMs + 1))
            #expect(client.expectClosed())
        }
    }

    @Test("requests before hello do not extend the hello deadline")
    func helloTimeoutDespiteTraffic() throws {
        try withTestServer({ $0.helloTimeoutMs = 10_000; $0.heartbeatMs = 600_000 }) { server in
            let client = try server.connect()
            var bye: [String: Any]?
            // A request every 2 s of the server's clock: the fifth advance
            // reaches the 10 s deadline however busy the connection was.
            for _ in 0..<8 {
                try client.sendFrame(["type": "ping", "id": 1])
                let frame = try client.readFrame()
                if frame.type == "bye" { bye = frame; break }
                #expect(frame.errorCode == .helloRequired)
                #expect(server.handle.advanceClock(milliseconds: 2_000))
            }
            #expect(bye?["reason"] as? String == "hello_timeout", "seen: \(describe(client.transcript))")
            #expect(server.handle.advanceClock(milliseconds: server.config.lingerMs + 1))
            #expect(client.expectClosed())
        }
    }

    @Test("hello in time cancels the hello timeout")
    func helloInTime() throws {
        try withTestServer({ $0.helloTimeoutMs = 10_000; $0.heartbeatMs = 600_000 }) { server in
            let client = try server.connectReady()
            #expect(server.handle.advanceClock(milliseconds: 30_000))
            #expect(try client.request("ping").isOK)
            #expect(!client.pushes.contains { $0.type == "bye" }, "got: \(describe(client.pushes))")
        }
    }
}
