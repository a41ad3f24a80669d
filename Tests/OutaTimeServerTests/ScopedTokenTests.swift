import OutaTimeTestSupport
import Foundation
import OutaTimeProtocol
import OutaTimeServer
import Testing

/// Tokens limited to channel patterns (`channels`), end to end: a real
/// server reading a real tokens file.
@Suite("scoped tokens", .timeLimit(.minutes(3)))
struct ScopedTokenTests {
    static var entries: [[String: Any]] { [
        tokenEntry("doc-admin-1955", "Doc Brown", "admin"),
        tokenEntry("lobby-board-1885", "Lobby board", "watch", channels: ["starport/lobby"]),
        tokenEntry("timer-op-2015", "Timer operator", "operate", channels: ["timers/hill-valley", "laps/*"]),
        tokenEntry("everything-1985", "Marty", "operate", channels: ["*"]),
    ] }
    static let operatorScope = "timers/hill-valley, laps/*"

    /// A server reading `entries` from a tokens file.
    func withScopedServer(_ body: (TestServer) throws -> Void) throws {
        let file = try TokensFile(Self.entries)
        try withTestServer(file.configure) { server in try body(server) }
        withExtendedLifetime(file) {}
    }

    @Test("in scope: subscribe, get, history, command, publish and unsubscribe are allowed")
    func inScopeAllowed() throws {
        try withScopedServer { server in
            let client = try server.connectReady(token: "timer-op-2015")
            let subscribed = try client.call("subscribe", ["channel": "timers/hill-valley"])
            #expect(subscribed["channel"] as? String == "timers/hill-valley")
            #expect(try client.call("get", ["channel": "timers/hill-valley"])["kind"] as? String == "timers")
            let added = try client.call("command", ["channel": "timers/hill-valley", "action": "add",
                                                    "args": ["event": "Clock tower", "remaining_s": 60]])
            #expect(added[int: "id"] == 1)
            #expect(try client.call("history", ["channel": "timers/hill-valley"])[int: "seq"] == 1)
            #expect(try client.call("publish", ["channel": "timers/hill-valley", "data": "hi"])[int: "delivered"] == 1)
            #expect(try client.request("unsubscribe", ["channel": "timers/hill-valley"]).isOK)
            // `laps/*`: any lap stopwatch.
            #expect(try client.request("command", ["channel": "laps/morning-run", "action": "start"]).isOK)
            #expect(try client.request("subscribe", ["channel": "laps/evening.run"]).isOK)
        }
    }

    @Test("out of scope: every request that names a channel is forbidden, naming the channel and the scope",
          arguments: ["subscribe", "unsubscribe", "get", "history", "command", "publish"])
    func outOfScopeForbidden(operation: String) throws {
        try withScopedServer { server in
            let client = try server.connectReady(token: "timer-op-2015")
            // Same kind other name, and another kind.
            for channel in ["timers/other", "starport/main"] {
                var fields: [String: Any] = ["channel": channel]
                if operation == "command" { fields["action"] = "add"; fields["args"] = ["event": "x", "remaining_s": 1] }
                if operation == "publish" { fields["data"] = "hi" }
                let reply = try client.request(operation, fields)
                #expect(reply.errorCode == .forbidden, "\(operation) \(channel): \(describe([reply]))")
                let message = reply.errorMessage ?? ""
                #expect(message.contains("'\(channel)'"), "message should name the channel: \(message)")
                #expect(message.contains(Self.operatorScope), "message should give the scope: \(message)")
                #expect(!message.contains("timer-op-2015"), "the token leaked into the message")
            }
            // The connection stays, and nothing was created by the refused requests.
            #expect(try client.request("ping").isOK)
            let doc = try server.connectReady(token: "doc-admin-1955")
            let listed = try doc.call("list")[objects: "channels"]?.compactMap { $0["channel"] as? String }
            #expect(listed == [], "refused requests created channels: \(String(describing: listed))")
        }
    }

    @Test("forbidden looks the same whether the channel exists or not")
    func noPresenceLeak() throws {
        try withScopedServer { server in
            let doc = try server.connectReady(token: "doc-admin-1955")
            try doc.call("command", ["channel": "starport/main", "action": "dispatch",
                                     "args": ["model": "SWingV2", "path": "AC"]])
            let board = try server.connectReady(token: "lobby-board-1885")
            for operation in ["get", "history", "subscribe"] {
                let existing = try board.request(operation, ["channel": "starport/main"])
                let missing = try board.request(operation, ["channel": "starport/ghost"])
                #expect(existing.errorCode == .forbidden && missing.errorCode == .forbidden)
                let normalised = missing.errorMessage?.replacingOccurrences(of: "starport/ghost", with: "starport/main")
                #expect(existing.errorMessage == normalised, "\(operation): \(describe([existing, missing]))")
            }
        }
    }

    @Test("list shows only the channels the token may see")
    func listFiltered() throws {
        try withScopedServer { server in
            let doc = try server.connectReady(token: "doc-admin-1955")
            let all = ["delorean/x", "laps/a", "starport/lobby", "starport/main", "timers/hill-valley", "timers/other"]
            for channel in all { try doc.call("get", ["channel": channel]) }

            func listed(_ client: TestClient, kind: String? = nil) throws -> [String] {
                let result = try client.call("list", kind.map { ["kind": $0] } ?? [:])
                return result[objects: "channels"]?.compactMap { $0["channel"] as? String } ?? []
            }
            #expect(try listed(doc) == all)
            let timerOperator = try server.connectReady(token: "timer-op-2015")
            #expect(try listed(timerOperator) == ["laps/a", "timers/hill-valley"])
            #expect(try listed(timerOperator, kind: "timers") == ["timers/hill-valley"])
            #expect(try listed(timerOperator, kind: "starport") == [])
            let board = try server.connectReady(token: "lobby-board-1885")
            #expect(try listed(board) == ["starport/lobby"])
            let marty = try server.connectReady(token: "everything-1985")
            #expect(try listed(marty) == all)
        }
    }

    @Test("a scoped watch token keeps its role limits inside its scope")
    func roleStillApplies() throws {
        try withScopedServer { server in
            let board = try server.connectReady(token: "lobby-board-1885")
            #expect(try board.request("subscribe", ["channel": "starport/lobby"]).isOK)
            let quote = try board.request("command", ["channel": "starport/lobby", "action": "quote",
                                                      "args": ["model": "SWingV2", "path": "AC"]])
            #expect(quote.isOK, "a read-only action in scope: \(describe([quote]))")
            let publish = try board.request("publish", ["channel": "starport/lobby", "data": 1])
            #expect(publish.errorCode == .forbidden)
            #expect(publish.errorMessage?.contains("needs role operate") == true, "\(describe([publish]))")
        }
    }

    @Test("the tokens file loader refuses a bad pattern, naming it", arguments: [
        "starport/lob*", "*/main", "starport", "starport/", "ships/*", "ships/main", "**", "starport/**",
        "", "delorean/a b", "timers/hill/valley", "Starport/*",
    ])
    func badPatternRefused(pattern: String) throws {
        let file = try TokensFile([tokenEntry("secret-board-1885", "Board", "watch", channels: ["starport/lobby", pattern])])
        do {
            _ = try TokenTable.load(from: file.path)
            Issue.record("pattern '\(pattern)' was accepted")
        } catch {
            #expect(error.message.contains("channel pattern '\(pattern)'"), "\(error.message)")
            #expect(error.message.contains(file.path), "the message should name the file: \(error.message)")
            #expect(error.message.contains("entry 1 of 1 ('Board')"), "\(error.message)")
            #expect(error.message.contains("KIND/NAME"), "the message should say what is allowed: \(error.message)")
            #expect(!error.message.contains("secret-board-1885"), "the token leaked into the message")
        }
    }

    @Test("the loader refuses a malformed channels list and unknown keys", arguments: [
        (#"[{"token": "secret-board-1885", "name": "B", "role": "watch", "channels": []}]"#, "'channels' is empty"),
        (#"[{"token": "secret-board-1885", "name": "B", "role": "watch", "channels": "starport/*"}]"#, "'channels' is a string, not an array"),
        (#"[{"token": "secret-board-1885", "name": "B", "role": "watch", "channels": [7]}]"#, "'channels' holds an integer"),
        (#"[{"token": "secret-board-1885", "name": "B", "role": "watch", "channel": ["starport/*"]}]"#, "unknown key 'channel'"),
        (#"[{"token": "secret-board-1885", "name": "B", "role": "root"}]"#, "role 'root' is not one of watch, operate, admin"),
        (#"[{"token": "secret-board-1885", "name": "B", "role": "watch"}, {"token": "secret-board-1885", "name": "C", "role": "admin"}]"#,
         "entry 2 of 2 ('C'): repeats the token"),
        (#"{"token": "secret-board-1885"}"#, "must be a JSON array"),
        (#"[{"token": "secret-board-1885",}]"#, "is not valid JSON"),
    ])
    func malformedFileRefused(text: String, expected: String) throws {
        try expectTokensFileRefused(text, expected, secrets: ["secret-board-1885"])
    }

    @Test("the loader reads the three pattern forms")
    func patternsParsed() throws {
        let file = try TokensFile([
            tokenEntry("secret-board-1885", "Board", "watch", channels: ["starport/lobby", "timers/*", "*"]),
            tokenEntry("secret-doc-1955", "Doc", "admin"),
        ])
        let table = try TokenTable.load(from: file.path)
        #expect(table.entries.map(\.scope) == [
            .only([.exact(try ChannelName.parse("starport/lobby")), .kind(.timers), .all]), .everything,
        ])
        #expect(table.entries.map(\.role) == [.watch, .admin])
    }
}

/// `stats` reports server-wide figures: a token limited to some channels
/// may not read them unless it is admin.
@Suite("stats and scoped tokens", .timeLimit(.minutes(3)))
struct ScopedStatsTests {
    @Test("a scoped non-admin token's stats (json or prometheus) is forbidden, naming its scope; unscoped and admin tokens read it")
    func scopedStatsForbidden() throws {
        let file = try TokensFile(ScopedTokenTests.entries + [
            tokenEntry("lobby-admin-1955", "Lobby admin", "admin", channels: ["starport/lobby"]),
            tokenEntry("watch-all-1985", "Watch all", "watch"),
        ])
        try withTestServer(file.configure) { server in
            let lobby = try server.connectReady(token: "lobby-board-1885")
            for fields in [[:], ["format": "prometheus"]] as [[String: Any]] {
                let refused = try lobby.request("stats", fields)
                #expect(refused.errorCode == .forbidden, "\(describe([refused]))")
                #expect((refused.errorMessage ?? "").contains("starport/lobby"), "\(refused.errorMessage ?? "")")
            }
            let scopedOperator = try server.connectReady(token: "timer-op-2015")
            #expect(try scopedOperator.request("stats").errorCode == .forbidden)
            #expect(try lobby.request("ping").isOK)
            for token in ["watch-all-1985", "lobby-admin-1955", "doc-admin-1955"] {
                let client = try server.connectReady(token: token)
                #expect(try client.call("stats")[int: "connections"] != nil, "\(token)")
            }
        }
        withExtendedLifetime(file) {}
    }
}
