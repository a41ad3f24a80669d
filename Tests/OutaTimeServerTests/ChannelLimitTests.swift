import Foundation
import OutaTimeProtocol
@testable import OutaTimeServer
import OutaTimeTestSupport
import Testing

/// `--max-channels` and `--idle-channel-s`: creating a channel over the
/// limit is `server_busy` naming the flag while existing channels go on;
/// a channel without events, subscribers or commits in flight is forgotten
/// from memory and from the database after the idle time.
@Suite("channel limits", .timeLimit(.minutes(3)))
struct ChannelLimitTests {
    @Test("over --max-channels creating a channel is server_busy naming the flag; existing channels go on")
    func maxChannels() throws {
        try withTestServer({ $0.maxChannels = 3 }) { server in
            let client = try server.connectReady(name: "flood")
            for name in ["laps/a", "laps/b", "timers/c"] {
                #expect(try client.request("get", ["channel": name]).isOK)
            }
            for (type, channel) in [("get", "laps/d"), ("subscribe", "laps/e")] {
                let refused = try client.request(type, ["channel": channel])
                #expect(refused.errorCode == .serverBusy, "\(type) \(channel): \(describe([refused]))")
                #expect(refused.errorMessage?.contains("--max-channels") == true, "\(refused.errorMessage ?? "")")
                #expect(refused.errorMessage?.contains("3") == true)
            }
            let command = try client.request("command", ["channel": "laps/f", "action": "start"])
            #expect(command.errorCode == .serverBusy)
            // Existing channels go on: a command and a subscribe.
            #expect(try client.request("command", ["channel": "laps/a", "action": "start"]).isOK)
            #expect(try client.request("subscribe", ["channel": "laps/b"]).isOK)
            let stats = try client.call("stats")
            #expect(stats[int: "channels"] == 3)
            #expect(stats[int: "max_channels"] == 3)
            #expect(stats[int: "channels_refused"] == 3)
            let listed = try client.call("list")["channels"] as? [[String: Any]]
            #expect(listed?.compactMap { $0["channel"] as? String } == ["laps/a", "laps/b", "timers/c"])
        }
    }

    /// Polls `list` until it names exactly `names` (bounded: 10 s).
    private func awaitListed(_ names: [String], on client: TestClient,
                             sourceLocation: SourceLocation = #_sourceLocation) throws {
        var listed: [String] = []
        for _ in 0..<500 {
            listed = (try client.call("list")["channels"] as? [[String: Any]] ?? []).compactMap { $0["channel"] as? String }
            if listed == names { return }
            usleep(20_000)
        }
        Issue.record("list stayed \(listed), expected \(names)", sourceLocation: sourceLocation)
    }

    @Test("idle empty channels are forgotten from memory and the database; channels with events or subscribers stay")
    func idleChannelsForgotten() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("outatime.sqlite")
        do {
            // A minute's idleness, passed with the server's clock
            // (``ServerHandle/advanceClock(milliseconds:)``), not slept.
            let server = try TestServer(databasePath: path) { $0.idleChannelMs = 60_000; $0.heartbeatMs = 600_000 }
            defer { server.stop() }
            let client = try server.connectReady(name: "c")
            #expect(try client.request("get", ["channel": "laps/idle"]).isOK)
            #expect(try client.request("subscribe", ["channel": "laps/watched"]).isOK)
            #expect(try client.request("command", ["channel": "laps/used", "action": "start"]).isOK)
            // A failed action still creates the channel (§5): it has no event.
            #expect(try client.request("command", ["channel": "delorean/failed", "action": "travel"]).errorCode
                    == .noDestination)
            #expect(server.handle.advanceClock(milliseconds: 30_000))
            try awaitListed(["delorean/failed", "laps/idle", "laps/used", "laps/watched"], on: client)
            #expect(server.handle.advanceClock(milliseconds: 30_000))
            try awaitListed(["laps/used", "laps/watched"], on: client)
            var stats = try client.call("stats")
            #expect(stats[int: "channels_forgotten"] == 2)
            #expect(stats[int: "channels"] == 2)

            // The last subscriber leaves: forgotten too.
            #expect(try client.request("unsubscribe", ["channel": "laps/watched"]).isOK)
            #expect(server.handle.advanceClock(milliseconds: 60_000))
            try awaitListed(["laps/used"], on: client)
            // Named again, a forgotten channel comes back new.
            let again = try client.call("get", ["channel": "laps/idle"])
            #expect(again[int: "seq"] == 0)
            stats = try client.call("stats")
            #expect((stats[int: "channels_forgotten"] ?? 0) >= 3)
            #expect(server.handle.advanceClock(milliseconds: 60_000))
            try awaitListed(["laps/used"], on: client)
            // Still usable after the drop: a command creates it and stores an event.
            #expect(try client.request("command", ["channel": "laps/idle", "action": "start"]).isOK)
            try awaitListed(["laps/idle", "laps/used"], on: client)
        }
        // The database forgot them too: a restart loads only the two with events.
        let server = try TestServer(databasePath: path) { $0.idleChannelMs = 60_000 }
        defer { server.stop() }
        let client = try server.connectReady(name: "after")
        let listed = (try client.call("list")["channels"] as? [[String: Any]] ?? [])
        #expect(listed.compactMap { $0["channel"] as? String } == ["laps/idle", "laps/used"])
        #expect(listed.compactMap { $0[int: "seq"] } == [1, 1])
    }
}

/// `list` pages with `limit` and `after`, and no page is larger than
/// `max_frame` (protocol §6.6).
@Suite("list paging", .timeLimit(.minutes(3)))
struct ListPagingTests {
    @Test("list pages by limit and after, says next while more follow, and caps a page to fit max_frame")
    func paging() throws {
        // (2,498 − 2,048) / 150 = 3 entries per frame.
        try withTestServer({ $0.maxFrame = 2_498 }) { server in
            let client = try server.connectReady(name: "pager")
            let names = ["laps/a", "laps/b", "laps/c", "starport/d", "timers/e", "timers/f", "timers/g"]
            for name in names.reversed() { #expect(try client.request("get", ["channel": name]).isOK) }

            func channels(_ result: [String: Any]) -> [String] {
                (result["channels"] as? [[String: Any]] ?? []).compactMap { $0["channel"] as? String }
            }
            var seen: [String] = []
            var fields: [String: Any] = [:]
            for _ in 0..<10 {
                let page = try client.call("list", fields)
                let got = channels(page)
                #expect(got.count <= 3, "page of \(got.count) entries over max_frame's 3")
                seen += got
                guard let next = page["next"] as? String else { break }
                #expect(next == got.last)
                fields = ["after": next]
            }
            #expect(seen == names)

            let two = try client.call("list", ["limit": 2, "after": "laps/b"])
            #expect(channels(two) == ["laps/c", "starport/d"])
            #expect(two["next"] as? String == "starport/d")
            let last = try client.call("list", ["after": "timers/e"])
            #expect(channels(last) == ["timers/f", "timers/g"])
            #expect(last["next"] == nil)
            let kind = try client.call("list", ["kind": "timers", "limit": 1])
            #expect(channels(kind) == ["timers/e"] && kind["next"] as? String == "timers/e")

            for bad: [String: Any] in [["limit": 0], ["limit": 1001], ["after": 5]] {
                let reply = try client.request("list", bad)
                #expect(reply.errorCode == .invalidRequest, "\(bad): \(describe([reply]))")
            }
        }
    }
}
