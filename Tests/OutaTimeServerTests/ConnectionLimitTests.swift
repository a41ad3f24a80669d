import Foundation
import OutaTimeProtocol
import OutaTimeServer
import OutaTimeTestSupport
import Testing

/// `--max-connections` and `--max-connections-per-address`: one connection
/// over a limit is sent `error` + `bye` `server_busy` at once and closed;
/// the others go on; a slot frees when a client leaves.
@Suite("connection limits", .timeLimit(.minutes(3)))
struct ConnectionLimitTests {
    /// Reads the refusal a connection over a limit gets: an `error`
    /// `server_busy` naming the flag, a `bye` `server_busy`, then the close.
    private func expectRefused(_ client: TestClient, flag: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let error = try client.readFrame(timeout: 2)
        #expect(error.type == "error", "got \(describe([error]))", sourceLocation: sourceLocation)
        #expect(error.errorCode == .serverBusy, sourceLocation: sourceLocation)
        #expect(error.errorMessage?.contains(flag) == true, "message: \(error.errorMessage ?? "none")",
                sourceLocation: sourceLocation)
        let bye = try client.readFrame(timeout: 2)
        #expect(bye.type == "bye" && bye["reason"] as? String == "server_busy", "got \(describe([bye]))",
                sourceLocation: sourceLocation)
        #expect(client.expectClosed(timeout: 2), "still open after bye", sourceLocation: sourceLocation)
    }

    /// Polls `stats` on `client` until `connections` is `count` (bounded).
    private func awaitConnections(_ count: Int, stats client: TestClient) throws -> [String: Any] {
        var stats: [String: Any] = [:]
        for _ in 0..<200 {
            stats = try client.call("stats")
            if stats[int: "connections"] == count { return stats }
            usleep(10_000)
        }
        Issue.record("connections stayed \(stats[int: "connections"] ?? -1), expected \(count)")
        return stats
    }

    @Test("over --max-connections a new client gets bye server_busy at once; the others go on; a slot frees when one leaves")
    func totalLimit() throws {
        try withTestServer({ $0.maxConnections = 3 }) { server in
            let first = try server.connectReady(name: "first")
            let second = try server.connectReady(name: "second")
            let observer = try server.connectReady(name: "observer")

            let started = Date()
            let refused = try server.connect()
            try expectRefused(refused, flag: "--max-connections")
            #expect(Date().timeIntervalSince(started) < 2, "the refusal took \(Date().timeIntervalSince(started)) s")

            // A refused client that sends hello at once still reads the bye.
            let eager = try server.connect()
            try eager.sendFrame(["type": "hello", "id": 1, "protocol": 1])
            try expectRefused(eager, flag: "--max-connections")

            #expect(try first.request("ping").isOK)
            #expect(try second.request("ping").isOK)
            var stats = try observer.call("stats")
            #expect(stats[int: "connections"] == 3)
            #expect(stats[int: "max_connections"] == 3)
            #expect((stats[object: "connections_refused"]?["max_connections"] as? NSNumber)?.intValue == 2,
                    "stats: \(stats)")

            first.closeCleanly()
            _ = try awaitConnections(2, stats: observer)
            let next = try server.connectReady(name: "next")
            #expect(try next.request("ping").isOK)
            stats = try observer.call("stats")
            #expect(stats[int: "connections"] == 3)
            #expect((stats[object: "connections_refused"]?["max_connections"] as? NSNumber)?.intValue == 2)
        }
    }

    @Test("over --max-connections-per-address a client from that address gets bye server_busy; a slot frees when one leaves")
    func perAddressLimit() throws {
        // Every test client is 127.0.0.1: loopback counts like any address.
        try withTestServer({ $0.maxConnections = 100; $0.maxConnectionsPerAddress = 2 }) { server in
            let first = try server.connectReady(name: "first")
            let second = try server.connectReady(name: "second")

            let refused = try server.connect()
            try expectRefused(refused, flag: "--max-connections-per-address")
            #expect(try first.request("ping").isOK)

            let stats = try second.call("stats")
            #expect(stats[int: "connections"] == 2)
            #expect(stats[int: "max_connections_per_address"] == 2)
            let refusals = stats[object: "connections_refused"]
            #expect((refusals?["max_connections_per_address"] as? NSNumber)?.intValue == 1, "stats: \(stats)")
            #expect(refusals?["max_connections"] == nil)

            first.closeCleanly()
            _ = try awaitConnections(1, stats: second)
            let next = try server.connectReady(name: "next")
            #expect(try next.request("ping").isOK)
        }
    }

    @Test("the per-address limit counts each address apart: 127.0.0.2 connects while 127.0.0.1 is full, then fills its own")
    func perAddressLimitIsPerAddress() throws {
        try withTestServer({ $0.maxConnections = 100; $0.maxConnectionsPerAddress = 2 }) { server in
            let first = try server.connectReady(name: "first")
            let second = try server.connectReady(name: "second")
            try expectRefused(try server.connect(), flag: "--max-connections-per-address")

            // Linux answers all of 127.0.0.0/8: a second client address.
            let other = try TestClient(port: server.port, source: "127.0.0.2")
            try other.hello(name: "other")
            let otherSecond = try TestClient(port: server.port, source: "127.0.0.2")
            try otherSecond.hello(name: "other-second")
            #expect(try other.request("ping").isOK)
            try expectRefused(try TestClient(port: server.port, source: "127.0.0.2"), flag: "--max-connections-per-address")

            let stats = try first.call("stats")
            #expect(stats[int: "connections"] == 4)
            #expect((stats[object: "connections_refused"]?["max_connections_per_address"] as? NSNumber)?.intValue == 2,
                    "stats: \(stats)")
            #expect(try second.request("ping").isOK)
            #expect(try otherSecond.request("ping").isOK)
        }
    }

    @Test("the limits are validated and named in the error")
    func validation() {
        var config = ServerConfig()
        config.maxConnections = 0
        #expect(throws: ConfigError.self) { try config.validate() }
        do { try config.validate() } catch { #expect(error.message.contains("--max-connections 0")) }
        config = ServerConfig()
        config.maxConnectionsPerAddress = -1
        do { try config.validate() } catch { #expect(error.message.contains("--max-connections-per-address -1")) }
        #expect(ServerConfig.derivedMaxConnections >= 1)
    }
}
