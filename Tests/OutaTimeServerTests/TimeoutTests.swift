import OutaTimeTestSupport
import Foundation
import OutaTimeProtocol
import Testing

/// Idle and hello timeouts, with short settings so the tests stay fast.
@Suite("timeouts", .timeLimit(.minutes(3)))
struct TimeoutTests {
    @Test("a silent client gets bye idle_timeout and is closed after 2 × heartbeat")
    func idleTimeout() throws {
        try withTestServer({ $0.heartbeatMs = 200 }) { server in
            let client = try server.connectReady()
            let silentSince = Date()
            let bye = try client.readUntil(type: "bye", timeout: 5)
            let waited = Date().timeIntervalSince(silentSince)
            #expect(bye["reason"] as? String == "idle_timeout")
            // 2 × 200 ms counted from the server's receipt of hello, which is
            // a little before silentSince: allow some slack below 0.4 s.
            #expect(waited >= 0.3, "closed after \(waited) s, before 2 × heartbeat")
            #expect(waited < 5)
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

    @Test("a connection without hello gets bye hello_timeout and is closed")
    func helloTimeout() throws {
        try withTestServer({ $0.helloTimeoutMs = 300 }) { server in
            let client = try server.connect()
            let start = Date()
            let bye = try client.readUntil(type: "bye", timeout: 5)
            #expect(bye["reason"] as? String == "hello_timeout")
            #expect(Date().timeIntervalSince(start) >= 0.25)
            #expect(client.expectClosed())
        }
    }

    @Test("requests before hello do not extend the hello deadline")
    func helloTimeoutDespiteTraffic() throws {
        try withTestServer({ $0.helloTimeoutMs = 300; $0.heartbeatMs = 10_000 }) { server in
            let client = try server.connect()
            var bye: [String: Any]?
            for _ in 0..<40 {
                try client.sendFrame(["type": "ping", "id": 1])
                let frame = try client.readFrame()
                if frame.type == "bye" { bye = frame; break }
                #expect(frame.errorCode == .helloRequired)
                usleep(50_000)
            }
            #expect(bye?["reason"] as? String == "hello_timeout", "seen: \(describe(client.transcript))")
        }
    }

    @Test("hello in time cancels the hello timeout")
    func helloInTime() throws {
        try withTestServer({ $0.helloTimeoutMs = 500; $0.heartbeatMs = 10_000 }) { server in
            let client = try server.connectReady()
            usleep(800_000)
            #expect(try client.request("ping").isOK)
            #expect(!client.pushes.contains { $0.type == "bye" }, "got: \(describe(client.pushes))")
        }
    }
}
