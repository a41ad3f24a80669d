import OutaTimeTestSupport
import Foundation
import OutaTimeProtocol
import OutaTimeServer
import Testing

/// Who may create channels, and how many: `watch` reads create none, and
/// each token (each connection without tokens) creates at most
/// `--max-channels-per-token` of the channels the server holds.
@Suite("channel quotas", .timeLimit(.minutes(3)))
struct ChannelQuotaTests {
    static var entries: [[String: Any]] { [
        tokenEntry("doc-admin-1955", "Doc Brown", "admin"),
        tokenEntry("board-watch-1885", "Board", "watch", channels: ["starport/*"]),
        tokenEntry("op-a-1985", "Operator A", "operate"),
        tokenEntry("op-b-2015", "Operator B", "operate"),
    ] }

    func withQuotaServer(_ configure: @escaping (inout ServerConfig) -> Void = { _ in },
                         _ body: (TestServer) throws -> Void) throws {
        let file = try TokensFile(Self.entries)
        try withTestServer({ config in
            file.configure(&config)
            configure(&config)
        }) { server in try body(server) }
        withExtendedLifetime(file) {}
    }

    static func names(_ client: TestClient) throws -> [String] {
        try client.call("list")[objects: "channels"]?.compactMap { $0["channel"] as? String } ?? []
    }

    @Test("a watch token's get, subscribe, history and read-only command of new channels answer a new empty channel and create none; an operator's later creation reaches the subscribed watcher")
    func watchReadsCreateNothing() throws {
        try withQuotaServer({ $0.maxChannels = 5 }) { server in
            let board = try server.connectReady(token: "board-watch-1885")
            // Far more than --max-channels: none of them is created.
            for index in 0..<20 {
                let channel = "starport/ghost-\(index)"
                let got = try board.call("get", ["channel": channel])
                #expect(got[int: "seq"] == 0 && got["kind"] as? String == "starport" && got[object: "state"] != nil,
                        "\(describe([got]))")
                #expect(try board.call("history", ["channel": channel])[int: "seq"] == 0)
                let quote = try board.request("command", ["channel": channel, "action": "quote",
                                                          "args": ["model": "SWingV2", "path": "AC"]])
                #expect(quote.isOK, "\(describe([quote]))")
            }
            let subscribed = try board.call("subscribe", ["channel": "starport/ghost-0"])
            #expect(subscribed[int: "seq"] == 0 && subscribed[object: "state"] != nil, "\(describe([subscribed]))")
            #expect(try board.call("subscribe", ["channel": "starport/ghost-1", "since": 0])["recovered"] as? Bool == true)

            let doc = try server.connectReady(token: "doc-admin-1955")
            #expect(try Self.names(doc) == [], "watch reads created channels")
            #expect(try doc.call("stats")[int: "channels"] == 0)

            // An operator creates the watched channel: its events reach the watcher.
            let operatorA = try server.connectReady(token: "op-a-1985")
            let dispatched = try operatorA.request("command", ["channel": "starport/ghost-0", "action": "dispatch",
                                                              "args": ["model": "SWingV2", "path": "AC"]])
            #expect(dispatched.isOK, "\(describe([dispatched]))")
            let event = try board.readUntil(type: "event")
            #expect(event["channel"] as? String == "starport/ghost-0" && event[int: "seq"] == 1, "\(describe([event]))")
            #expect(try Self.names(doc) == ["starport/ghost-0"])
            // The channel exists now: the watcher reads it as it is.
            let now = try board.call("get", ["channel": "starport/ghost-0"])
            #expect((now[int: "seq"] ?? 0) >= 1, "\(describe([now]))")
        }
    }

    @Test("a token creates at most --max-channels-per-token channels over all its connections; then quota_exceeded naming the flag; other tokens and existing channels go on")
    func perTokenQuota() throws {
        try withQuotaServer({ $0.maxChannelsPerToken = 3 }) { server in
            let first = try server.connectReady(token: "op-a-1985")
            let second = try server.connectReady(token: "op-a-1985")
            #expect(try first.request("get", ["channel": "timers/a1"]).isOK)
            #expect(try first.request("subscribe", ["channel": "timers/a2"]).isOK)
            #expect(try second.request("command", ["channel": "timers/a3", "action": "add",
                                                   "args": ["event": "x", "remaining_s": 60]]).isOK)
            let refused = try second.request("get", ["channel": "timers/a4"])
            #expect(refused.errorCode == .quotaExceeded, "\(describe([refused]))")
            let message = refused.errorMessage ?? ""
            #expect(message.contains("timers/a4") && message.contains("--max-channels-per-token 3")
                && message.contains("Operator A"), "\(message)")
            #expect(try first.request("subscribe", ["channel": "timers/a5"]).errorCode == .quotaExceeded)
            // Existing channels, its own or not, are still used.
            #expect(try second.request("command", ["channel": "timers/a1", "action": "add",
                                                   "args": ["event": "y", "remaining_s": 60]]).isOK)
            let other = try server.connectReady(token: "op-b-2015")
            #expect(try other.request("get", ["channel": "timers/b1"]).isOK)
            let doc = try server.connectReady(token: "doc-admin-1955")
            let stats = try doc.call("stats")
            #expect(stats[int: "channels_over_quota"] == 2 && stats[int: "max_channels_per_token"] == 3, "\(stats)")
            #expect(try Self.names(doc) == ["timers/a1", "timers/a2", "timers/a3", "timers/b1"])
        }
    }

    @Test("without tokens the quota is per connection")
    func perConnectionQuota() throws {
        try withTestServer({ $0.maxChannelsPerToken = 2 }) { server in
            let first = try server.connectReady()
            #expect(try first.request("get", ["channel": "laps/one"]).isOK)
            #expect(try first.request("get", ["channel": "laps/two"]).isOK)
            let refused = try first.request("get", ["channel": "laps/three"])
            #expect(refused.errorCode == .quotaExceeded && (refused.errorMessage ?? "").contains("this connection"),
                    "\(describe([refused]))")
            let second = try server.connectReady()
            #expect(try second.request("get", ["channel": "laps/three"]).isOK)
            #expect(try second.request("get", ["channel": "laps/one"]).isOK)  // exists: no creation
        }
    }

    @Test("a channel forgotten idle and empty gives its place in the quota back")
    func forgottenFreesPlace() throws {
        try withQuotaServer({ config in
            config.maxChannelsPerToken = 2
            config.idleChannelMs = 100
        }) { server in
            let client = try server.connectReady(token: "op-a-1985")
            #expect(try client.request("get", ["channel": "timers/one"]).isOK)
            #expect(try client.request("get", ["channel": "timers/two"]).isOK)
            #expect(try client.request("get", ["channel": "timers/three"]).errorCode == .quotaExceeded)
            let doc = try server.connectReady(token: "doc-admin-1955")
            var forgotten = 0
            for _ in 0..<300 where forgotten < 2 {
                usleep(20_000)
                forgotten = try doc.call("stats")[int: "channels_forgotten"] ?? 0
            }
            #expect(forgotten == 2)
            #expect(try client.request("get", ["channel": "timers/three"]).isOK)
        }
    }

    @Test("--max-channels-per-token below 0 is refused, naming the flag")
    func badValue() {
        var config = ServerConfig()
        config.maxChannelsPerToken = -1
        #expect(throws: ConfigError.self) { try config.validate() }
        config.maxChannelsPerToken = 0
        #expect(throws: Never.self) { try config.validate() }
    }
}
