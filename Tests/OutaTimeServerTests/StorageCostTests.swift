import OutaTimeTestSupport
import Foundation
import OutaTimeProtocol
import Testing

/// What a command costs in storage does not grow with the channel: events
/// are stored with the whole state only once per as many events as the
/// channel holds (issue 12). Measured with `stats` `store_text_bytes`.
@Suite("storage cost per command", .timeLimit(.minutes(2)))
struct StorageCostTests {
    /// Sends `count` commands built by `args` on `channel`, 250 in flight at
    /// a time, and returns the JSON bytes the store committed meanwhile.
    static func bytesStored(_ client: TestClient, _ channel: String, _ action: String, count: Int,
                            args: (Int) -> [String: Any]) throws -> Int {
        let before = try #require(try client.call("stats")[int: "store_text_bytes"])
        var sent = 0
        while sent < count {
            let chunk = min(250, count - sent)
            let frames = (sent..<(sent + chunk)).map { n -> [String: Any] in
                ["type": "command", "id": n, "channel": channel, "action": action, "args": args(n)]
            }
            try client.sendFrames(frames)
            var replies = 0
            while replies < chunk {
                let frame = try client.readFrame()
                guard frame.type == "reply" else { continue }
                replies += 1
                guard frame.isOK else { throw TestClientError.failed("\(action): \(describe([frame]))") }
            }
            sent += chunk
        }
        return try #require(try client.call("stats")[int: "store_text_bytes"]) - before
    }

    @Test("timers: bytes stored per add are the same for the 3,000 adds after the first 3,000")
    func timerAdds() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            let channel = "timers/growing"
            let add = { (n: Int) -> [String: Any] in ["event": "countdown \(n)", "remaining_s": 3600 + n] }
            let first = try Self.bytesStored(client, channel, "add", count: 3_000, args: add)
            let second = try Self.bytesStored(client, channel, "add", count: 3_000, args: add)
            // Whole states with every event would store about 450 MB, then
            // 1.35 GB: three times as much for the second half.
            #expect(Double(second) < 1.5 * Double(first), "first 3,000 adds: \(first) B, next 3,000: \(second) B")
            #expect(second / 3_000 < 1_000, "\(second / 3_000) B per add on a list of 3,000–6,000 timers")
            // And what was stored reads back whole.
            let state = try client.call("get", ["channel": channel])
            #expect(state[int: "seq"] == 6_000)
            #expect(state[object: "state"]?[objects: "timers"]?.count == 6_000)
        }
    }

    @Test("starport: bytes stored per dispatch are the same for the 2,000 after the first 2,000")
    func dispatches() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            let channel = "starport/busy"
            let dispatch = { (n: Int) -> [String: Any] in
                ["model": "SWingV2", "path": "AC", "departs_at": "2099-01-01T00:00:00Z", "note": "flight \(n)"]
            }
            let first = try Self.bytesStored(client, channel, "dispatch", count: 2_000, args: dispatch)
            let second = try Self.bytesStored(client, channel, "dispatch", count: 2_000, args: dispatch)
            #expect(Double(second) < 1.5 * Double(first), "first 2,000 dispatches: \(first) B, next 2,000: \(second) B")
            #expect(try client.call("get", ["channel": channel])[object: "state"]?[objects: "dispatches"]?.count == 4_000)
        }
    }
}
