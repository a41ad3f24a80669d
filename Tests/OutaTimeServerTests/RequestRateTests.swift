import Foundation
import OutaTimeProtocol
@testable import OutaTimeServer
import OutaTimeTestSupport
import Testing

/// `--max-requests-per-second`: a connection over its rate has its reading
/// paused until its next window; its requests are all answered, in order,
/// later; other connections are unaffected.
@Suite("request rate limit", .timeLimit(.minutes(3)))
struct RequestRateTests {
    /// `count` pings with ids from `first` on, as one write.
    private func flood(_ client: TestClient, first: Int, count: Int) throws {
        try client.sendFrames((first..<first + count).map { ["type": "ping", "id": $0] })
    }

    @Test("a flooding connection is paused, answered in order later; another connection's pings go on")
    func flooderPaused() throws {
        // 20 requests per 60 s window, on the server's clock: the windows
        // pass when the test moves it (``ServerHandle/advanceClock(milliseconds:)``),
        // never by themselves during the test.
        try withTestServer({ $0.maxRequestsPerSecond = 20; $0.requestRateWindowMs = 60_000 }) { server in
            let flooder = try server.connectReady(name: "flooder")
            let other = try server.connectReady(name: "other")
            try flood(flooder, first: 1_000, count: 200)
            // hello took one request of the window: 19 pings are answered, then reading pauses.
            for id in 1_000..<1_019 { #expect(try flooder.readReply(id: id, timeout: 5).isOK) }

            // The other connection is answered while the flooder waits.
            for _ in 0..<5 {
                let pong = try other.request("ping", timeout: 2)
                #expect(pong.isOK, "got \(describe([pong]))")
            }
            let during = try other.call("stats")
            #expect(during[int: "request_rate_pauses"] == 1, "stats: \(during)")
            #expect(flooder.pushes.isEmpty && (try? flooder.readFrame(timeout: 0.2)) == nil, "answered past the rate")

            // Each window that passes answers the next 20, in order.
            var ids = Array(1_000..<1_019)
            var next = 1_019
            for window in 1...10 {
                #expect(server.handle.advanceClock(milliseconds: 60_000))
                let end = min(next + 20, 1_200)
                for id in next..<end {
                    let reply = try flooder.readReply(id: id, timeout: 5)
                    #expect(reply.isOK, "window \(window)")
                    if let got = (reply["id"] as? NSNumber)?.intValue { ids.append(got) }
                }
                next = end
                if next == 1_200 { break }
            }
            #expect(ids == Array(1_000..<1_200))
            #expect(flooder.pushes.isEmpty, "unexpected frames: \(describe(flooder.pushes))")

            // (Not a window more: 60 s without a frame would be its idle timeout.)
            let stats = try flooder.call("stats")
            #expect((stats[int: "request_rate_pauses"] ?? 0) >= 10, "stats: \(stats)")
            #expect(stats[int: "max_requests_per_second"] == 20)
            // The connection stays usable.
            #expect(try flooder.request("ping").isOK)
        }
    }

    @Test("a paused connection that half-closes still gets every reply, then the close")
    func halfCloseWhilePaused() throws {
        try withTestServer({ $0.maxRequestsPerSecond = 20; $0.requestRateWindowMs = 100 }) { server in
            let client = try server.connectReady()
            try flood(client, first: 1, count: 60)
            client.finishSending()
            for id in 1...60 {
                let reply = try client.readReply(id: id, timeout: 5)
                #expect(reply.isOK)
            }
            #expect(client.pushes.isEmpty, "unexpected frames: \(describe(client.pushes))")
            #expect(client.expectClosed(), "still open after the last reply")
        }
    }

    @Test("0 turns the limit off")
    func off() throws {
        try withTestServer({ $0.maxRequestsPerSecond = 0; $0.requestRateWindowMs = 60_000 }) { server in
            let client = try server.connectReady()
            try flood(client, first: 1, count: 200)
            for id in 1...200 {
                let reply = try client.readReply(id: id, timeout: 5)
                #expect(reply.isOK)
            }
            #expect(try client.call("stats")[int: "request_rate_pauses"] == 0)
        }
    }

    @Test("the limit is validated and named in the error")
    func validation() {
        var config = ServerConfig()
        config.maxRequestsPerSecond = -1
        do { try config.validate(); Issue.record("accepted -1") } catch {
            #expect(error.message.contains("--max-requests-per-second -1"))
        }
    }
}
