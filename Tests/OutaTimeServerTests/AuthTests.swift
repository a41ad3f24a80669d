import OutaTimeTestSupport
import Foundation
import Logging
import OutaTimeProtocol
import OutaTimeServer
import Testing

/// Tokens and roles (contract §7), on an in-process server.
@Suite("auth", .timeLimit(.minutes(3)))
struct AuthTests {
    static let tokens = [
        AccessToken(token: "watcher-secret-1885", name: "Wendy", role: .watch),
        AccessToken(token: "operator-secret-1955", name: "Otto", role: .operate),
        AccessToken(token: "admin-secret-2015", name: "Ada", role: .admin),
    ]

    static func withTokens(_ config: inout ServerConfig) { config.tokens = tokens }

    @Test("hello without a valid token is unauthorized, then bye, then close", arguments: [nil, "", "wrong-token"])
    func unauthorized(token: String?) throws {
        try withTestServer(Self.withTokens) { server in
            let client = try server.connect()
            var fields: [String: Any] = ["protocol": 1, "name": "Biff"]
            if let token { fields["token"] = token }
            let reply = try client.request("hello", fields)
            #expect(reply["ok"] as? Bool == false)
            #expect(reply.errorCode == .unauthorized, "got \(describe([reply]))")
            let bye = try client.readUntil(type: "bye")
            #expect(bye["reason"] as? String == "unauthorized")
            #expect(client.expectClosed(), "still open; seen: \(describe(client.transcript))")
        }
    }

    @Test("hello without id and without token is an unauthorized error push, then bye")
    func unauthorizedWithoutID() throws {
        try withTestServer(Self.withTokens) { server in
            let client = try server.connect()
            try client.sendFrame(["type": "hello", "protocol": 1])
            #expect(try client.readFrame().errorCode == .unauthorized)
            #expect(try client.readFrame()["reason"] as? String == "unauthorized")
            #expect(client.expectClosed())
        }
    }

    @Test("a watch token may read but publish is forbidden")
    func watchRole() throws {
        try withTestServer(Self.withTokens) { server in
            let client = try server.connect()
            let hello = try client.hello(name: "Biff", token: "watcher-secret-1885")
            #expect(hello["role"] as? String == "watch")

            let subscribed = try client.call("subscribe", ["channel": "delorean/doc"])
            // The configured identity beats the self-declared hello name.
            #expect(subscribed[objects: "watchers"]?.first?["name"] as? String == "Wendy")
            #expect(try client.request("get", ["channel": "delorean/doc"]).isOK)
            #expect(try client.request("list").isOK)
            #expect(try client.request("history", ["channel": "delorean/doc"]).isOK)
            #expect(try client.request("stats").isOK)

            let publish = try client.request("publish", ["channel": "delorean/doc", "data": 1])
            #expect(publish.errorCode == .forbidden, "got \(describe([publish]))")
            #expect(publish.errorMessage?.contains("publish") == true, "message should name the op")
            // forbidden keeps the connection
            #expect(try client.request("ping").isOK)
        }
    }

    @Test("operate and admin tokens can publish", arguments: [
        ("operator-secret-1955", "operate", "Otto"), ("admin-secret-2015", "admin", "Ada"),
    ])
    func publishingRoles(token: String, role: String, name: String) throws {
        try withTestServer(Self.withTokens) { server in
            let watcher = try server.connect()
            try watcher.hello(token: "watcher-secret-1885")
            try watcher.call("subscribe", ["channel": "timers/t"])

            let client = try server.connect()
            #expect(try client.hello(token: token)["role"] as? String == role)
            let result = try client.call("publish", ["channel": "timers/t", "data": "hi"])
            #expect(result[int: "delivered"] == 1)
            let message = try watcher.readUntil(type: "message")
            #expect(message[object: "from"]?["name"] as? String == name)
        }
    }

    @Test("without tokens every connection is operate")
    func anonymousIsOperate() throws {
        try withTestServer { server in
            let client = try server.connect()
            #expect(try client.hello(token: "anything")["role"] as? String == "operate")
            #expect(try client.request("publish", ["channel": "laps/x", "data": 1]).isOK)
        }
    }

    @Test("tokens never appear in the logs, even at trace level")
    func tokensNotLogged() throws {
        let folder = try TemporaryFolder()
        let logs = CapturedLogs()
        let server = try TestServer(databasePath: folder.path("db.sqlite"), logger: logs.logger(level: .trace),
                                    configure: Self.withTokens)
        defer { server.stop() }

        let good = try server.connect()
        try good.hello(token: "operator-secret-1955")
        try good.call("subscribe", ["channel": "delorean/log"])
        let bad = try server.connect()
        _ = try bad.request("hello", ["protocol": 1, "token": "guessed-secret-1985"])
        _ = try bad.readUntil(type: "bye")
        server.stop()

        let lines = logs.all
        #expect(!lines.isEmpty, "nothing was logged at trace level, so the check below proves nothing")
        for secret in ["watcher-secret-1885", "operator-secret-1955", "admin-secret-2015", "guessed-secret-1985"] {
            let leaks = lines.filter { $0.contains(secret) }
            #expect(leaks.isEmpty, "token leaked into logs: \(leaks.prefix(3))")
        }
    }
}
