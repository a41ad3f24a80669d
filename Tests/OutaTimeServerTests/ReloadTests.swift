import OutaTimeTestSupport
import Foundation
import OutaTimeProtocol
import OutaTimeServer
import Testing

/// Reloading the tokens file without a restart (`Server.reload()`, reached
/// in process through `ServerHandle.reload()`; SIGHUP in ExecutableTests).
@Suite("reload", .timeLimit(.minutes(3)))
struct ReloadTests {
    static var wendy: [String: Any] { tokenEntry("wendy-watch-1885", "Wendy", "watch") }
    static var otto: [String: Any] { tokenEntry("otto-operate-1955", "Otto", "operate") }
    static var ada: [String: Any] { tokenEntry("ada-admin-2015", "Ada", "admin") }

    /// A server reading `file`, logging into `logs`.
    func withServer(_ file: TokensFile, logs: CapturedLogs? = nil, _ body: (TestServer) throws -> Void) throws {
        let folder = try TemporaryFolder()
        let server = try TestServer(databasePath: folder.path("db.sqlite"), logger: logs?.logger(level: .trace),
                                    configure: file.configure)
        defer { server.stop() }
        try body(server)
    }

    @Test("a client stays connected across a reload; new connections use the new file")
    func connectedAcrossReload() throws {
        let file = try TokensFile([Self.wendy, Self.otto])
        try withServer(file) { server in
            let wendy = try server.connectReady(token: "wendy-watch-1885")
            try wendy.call("subscribe", ["channel": "delorean/reload"])
            let otto = try server.connectReady(token: "otto-operate-1955")

            try file.write([Self.wendy, Self.otto, Self.ada])
            #expect(server.handle.reload() == ReloadReport(tokens: .reloaded(entries: 3, closed: 0, updated: 0)))

            // The new token works at once, the established connections go on.
            let ada = try server.connectReady(token: "ada-admin-2015")
            #expect(try ada.call("publish", ["channel": "delorean/reload", "data": "after"])[int: "delivered"] == 1)
            #expect(try wendy.readUntil(type: "message")["data"] as? String == "after")
            #expect(try otto.request("command", ["channel": "delorean/reload", "action": "set_destination",
                                                 "args": ["time": "1955-11-12T22:04:00Z"]]).isOK)
            #expect(try wendy.readUntil(type: "event")["event"] as? String == "destination_set")
            #expect(try wendy.request("ping").isOK)
        }
    }

    @Test("a removed token's connection gets an unauthorized error and bye unauthorized; the token no longer admits")
    func removedTokenClosed() throws {
        let file = try TokensFile([Self.wendy, Self.otto])
        try withServer(file) { server in
            let wendy = try server.connectReady(token: "wendy-watch-1885")
            try wendy.call("subscribe", ["channel": "laps/reload"])
            let otto = try server.connectReady(token: "otto-operate-1955")
            try otto.call("subscribe", ["channel": "laps/reload"])

            try file.write([Self.wendy, Self.ada])
            #expect(server.handle.reload() == ReloadReport(tokens: .reloaded(entries: 2, closed: 1, updated: 0)))

            let error = try otto.readUntil(type: "error")
            #expect(error.errorCode == .unauthorized)
            #expect(error.errorMessage?.contains("no longer listed") == true, "\(describe([error]))")
            #expect(try otto.readUntil(type: "bye")["reason"] as? String == "unauthorized")
            #expect(otto.expectClosed(), "still open; seen: \(describe(otto.transcript))")
            // The others see it leave, and stay.
            #expect(try wendy.readUntil(type: "presence").sessions("joined") == [otto.session].compactMap { $0 })
            #expect(try wendy.readUntil(type: "presence").sessions("left") == [otto.session].compactMap { $0 })
            #expect(try wendy.request("ping").isOK)

            let again = try server.connect()
            let refused = try again.request("hello", ["protocol": 1, "token": "otto-operate-1955"])
            #expect(refused.errorCode == .unauthorized)
            #expect(try again.readUntil(type: "bye")["reason"] as? String == "unauthorized")
        }
    }

    @Test("a bad file is logged as an error naming the file, and the old tokens stay", arguments: [
        ("[{\"token\": \"otto-operate-1955\", \"name\": \"Otto\", \"role\": \"operate\", \"channels\": [\"laps/x*\"]}]",
         "channel pattern 'laps/x*'"),
        ("[{\"token\": \"otto-operate-1955\",", "is not valid JSON"),
        ("[]", "lists no tokens"),
        ("[{\"token\": \"otto-operate-1955\", \"name\": \"Otto\", \"role\": \"operate\"}]",
         "entry 1 of 1 ('Otto'): the token is too weak"),
    ])
    func badFileKeepsOldTokens(text: String, problem: String) throws {
        let file = try TokensFile([Self.wendy, Self.otto])
        let logs = CapturedLogs()
        try withServer(file, logs: logs) { server in
            let otto = try server.connectReady(token: "otto-operate-1955")
            try otto.call("subscribe", ["channel": "timers/reload"])

            try file.write(text: text)
            let report = try #require(server.handle.reload())
            guard case .failed(let message) = report.tokens else {
                Issue.record("reload did not fail: \(report)")
                return
            }
            #expect(message.contains(file.path) && message.contains(problem), "\(message)")

            // Old tokens still admit; the established connection is untouched.
            #expect(try server.connectReady(token: "wendy-watch-1885").request("ping").isOK)
            #expect(try otto.request("publish", ["channel": "timers/reload", "data": 1]).isOK)
            let errors = logs.all.filter { $0.hasPrefix("error ") }
            #expect(errors.contains { $0.contains(file.path) && $0.contains(problem) }, "error lines: \(errors)")
            for secret in ["otto-operate-1955", "wendy-watch-1885"] {
                #expect(!logs.all.contains { $0.contains(secret) }, "a token reached the logs")
            }

            // The file repaired: the next reload takes it.
            try file.write([Self.wendy, Self.otto, Self.ada])
            #expect(server.handle.reload()?.tokens == .reloaded(entries: 3, closed: 0, updated: 0))
            #expect(try server.connectReady(token: "ada-admin-2015").request("ping").isOK)
            #expect(try otto.request("ping").isOK)
        }
    }

    @Test("a changed role applies to the established connection at once")
    func roleChangeApplied() throws {
        let file = try TokensFile([Self.wendy])
        try withServer(file) { server in
            let wendy = try server.connectReady(token: "wendy-watch-1885")
            #expect(try wendy.request("publish", ["channel": "laps/role", "data": 1]).errorCode == .forbidden)

            try file.write([tokenEntry("wendy-watch-1885", "Wendy", "operate")])
            #expect(server.handle.reload()?.tokens == .reloaded(entries: 1, closed: 0, updated: 1))
            #expect(try wendy.request("publish", ["channel": "laps/role", "data": 1]).isOK)

            try file.write([Self.wendy])
            #expect(server.handle.reload()?.tokens == .reloaded(entries: 1, closed: 0, updated: 1))
            #expect(try wendy.request("publish", ["channel": "laps/role", "data": 1]).errorCode == .forbidden)
        }
    }

    @Test("a narrowed scope applies to new requests; one that excludes a subscription closes the connection")
    func scopeChange() throws {
        let file = try TokensFile([Self.wendy, Self.otto])
        try withServer(file) { server in
            let wendy = try server.connectReady(token: "wendy-watch-1885")
            try wendy.call("subscribe", ["channel": "starport/lobby"])
            let otto = try server.connectReady(token: "otto-operate-1955")
            try otto.call("subscribe", ["channel": "timers/hill-valley"])

            try file.write([
                tokenEntry("wendy-watch-1885", "Wendy", "watch", channels: ["starport/lobby"]),
                tokenEntry("otto-operate-1955", "Otto", "operate", channels: ["starport/*"]),
            ])
            #expect(server.handle.reload()?.tokens == .reloaded(entries: 2, closed: 1, updated: 1))

            // Wendy's subscription is in the new scope: she stays, limited.
            #expect(try wendy.request("get", ["channel": "starport/lobby"]).isOK)
            let outside = try wendy.request("get", ["channel": "starport/main"])
            #expect(outside.errorCode == .forbidden, "\(describe([outside]))")
            #expect(outside.errorMessage?.contains("starport/lobby") == true)

            // Otto watches a list the new scope excludes: closed, told why.
            let error = try otto.readUntil(type: "error")
            #expect(error.errorCode == .unauthorized)
            #expect(error.errorMessage?.contains("'timers/hill-valley'") == true, "\(describe([error]))")
            #expect(try otto.readUntil(type: "bye")["reason"] as? String == "unauthorized")
            #expect(otto.expectClosed())
        }
    }

    @Test("without a tokens file there is nothing to reload, and it says so")
    func anonymousNothingToReload() throws {
        let logs = CapturedLogs()
        let folder = try TemporaryFolder()
        let server = try TestServer(databasePath: folder.path("db.sqlite"), logger: logs.logger(level: .info))
        defer { server.stop() }
        let client = try server.connectReady()
        #expect(server.handle.reload() == ReloadReport(tokens: .anonymous))
        #expect(logs.all.contains { $0.contains("no tokens file (anonymous mode), nothing to reload") }, "\(logs.all)")
        #expect(try client.request("ping").isOK)
    }

    @Test("a stopped server answers reload with nil instead of hanging")
    func reloadAfterStop() throws {
        let file = try TokensFile([Self.wendy])
        let folder = try TemporaryFolder()
        let server = try TestServer(databasePath: folder.path("db.sqlite"), configure: file.configure)
        server.stop()
        #expect(server.handle.reload(timeout: 5) == nil)
    }
}
