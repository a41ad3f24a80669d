import OutaTimeTestSupport
import Foundation
import OutaTimeProtocol
import OutaTimeServer
import Testing

/// In-process shutdown: every connection is told, the loop closes cleanly,
/// and what was created survives into the next server on the same file.
@Suite("shutdown", .timeLimit(.minutes(3)))
struct ShutdownTests {
    @Test("shutdown sends bye server_shutdown to every connection and the loop closes cleanly")
    func shutdownWithClients() throws {
        try withTestServer { server in
            let subscribed = try server.connectReady()
            try subscribed.call("subscribe", ["channel": "delorean/end"])
            let idle = try server.connectReady()
            let beforeHello = try server.connect()
            // Make sure the last connection was accepted before shutting down.
            #expect(try beforeHello.request("ping").errorCode == .helloRequired)

            server.requestShutdown()
            for client in [subscribed, idle, beforeHello] {
                let bye = try client.readUntil(type: "bye")
                #expect(bye["reason"] as? String == "server_shutdown")
                #expect(client.expectClosed(), "still open; seen: \(describe(client.transcript))")
            }
            server.stop()
            #expect(throws: TestClientError.self, "connections still accepted after shutdown") {
                _ = try TestClient(port: server.port)
            }
        }
    }

    @Test("shutdown with a client mid-frame still closes cleanly")
    func shutdownMidFrame() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            let frame = TestClient.framed(try TestClient.body(["type": "ping", "id": 99]))
            try client.sendRaw(Array(frame.prefix(6)))
            let abrupt = try server.connectReady()
            abrupt.closeAbruptly()
            server.requestShutdown()
            #expect(try client.readUntil(type: "bye")["reason"] as? String == "server_shutdown")
            #expect(client.expectClosed())
        }
    }

    @Test("shutdown of an idle server returns promptly and cleanly")
    func shutdownIdle() throws {
        let start = Date()
        try withTestServer { _ in }
        #expect(Date().timeIntervalSince(start) < 10)
    }

    @Test("a database file removed while the server runs: commands get internal saying so, none is acknowledged into the void")
    func databaseFileRemoved() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("outatime.sqlite")
        let server = try TestServer(databasePath: path)
        defer { server.stop() }
        let client = try server.connectReady()
        #expect(try client.request("command", ["channel": "laps/gone", "action": "start"]).isOK)
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        for action in ["lap", "stop"] {
            let reply = try client.request("command", ["channel": "laps/gone", "action": action])
            #expect(reply.errorCode == .internal, "\(action): \(reply)")
            #expect(reply.errorMessage?.contains("the database file \(path) was removed or replaced") == true, "\(reply)")
        }
        #expect(try client.request("ping").isOK)
    }

    @Test("a second server on the same database is refused, naming the first; once it stops the database is free")
    func oneServerPerDatabase() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("outatime.sqlite")
        let first = try TestServer(databasePath: path)
        var refusal = ""
        do {
            _ = try TestServer(databasePath: path)
            Issue.record("a second server started on \(path)")
        } catch {
            refusal = "\(error)"
        }
        #expect(refusal.contains("the database \(path) is in use by another outatime-server (process \(getpid()))"), "\(refusal)")
        #expect(try first.connectReady().request("ping").isOK, "the first server goes on")
        first.stop()
        let second = try TestServer(databasePath: path)
        defer { second.stop() }
        #expect(try second.connectReady().request("ping").isOK)
    }

    @Test("a channel created by subscribe survives a restart on the same database")
    func durability() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("outatime.sqlite")

        let first = try TestServer(databasePath: path)
        var created: [String: Any] = [:]
        do {
            defer { first.stop() }
            let client = try first.connectReady()
            try client.call("subscribe", ["channel": "timers/keep"])
            created = try client.call("get", ["channel": "delorean/keep"])
        }

        let second = try TestServer(databasePath: path)
        defer { second.stop() }
        let client = try second.connectReady()
        let channels = try #require(try client.call("list")[objects: "channels"])
        #expect(channels.map { $0["channel"] as? String } == ["delorean/keep", "timers/keep"])
        #expect(channels.map { $0[int: "seq"] } == [0, 0])
        #expect(channels.map { $0[int: "watchers"] } == [0, 0])
        // The state comes back exactly as stored, present_time included.
        let reloaded = try client.call("get", ["channel": "delorean/keep"])
        #expect(jsonEqual(reloaded["state"], created["state"]), "\(describe([created, reloaded]))")
    }

    @Test("a restarted server gives new session ids")
    func sessionsDifferAcrossRestarts() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("outatime.sqlite")
        var sessions: [String] = []
        for _ in 0..<2 {
            let server = try TestServer(databasePath: path)
            defer { server.stop() }
            sessions.append(try server.connectReady().session ?? "")
        }
        #expect(sessions.count == 2 && sessions[0] != sessions[1], "\(sessions)")
    }
}
