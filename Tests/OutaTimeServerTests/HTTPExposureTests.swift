import OutaTimeTestSupport
import Foundation
import OutaTimeProtocol
import OutaTimeServer
import Testing

/// What one client of the HTTP listener can take from the others, and
/// where the listener may listen: the per-address cap, the head timeout,
/// and `--http-public`.
@Suite("HTTP listener exposure", .timeLimit(.minutes(3)))
struct HTTPExposureTests {
    typealias HTTP = HTTPListenerTests

    @Test("a crowd from one address that sent a byte each holds only its cap: the rest get 503, and /healthz from another address is answered at once")
    func crowdHoldsItsCap() throws {
        try withTestServer({ config in
            config.http = HTTPEndpoint(port: 0)
            config.maxHTTPConnections = 8
            config.maxHTTPConnectionsPerAddress = 4
            // Nothing times out during the test: only the cap can free a slot.
            config.httpHeadTimeoutMs = 30_000
            config.helloTimeoutMs = 30_000
        }) { server in
            let board = try server.connectReady(name: "board")
            let crowd = try (0..<12).map { _ in try TestClient(port: server.httpPort) }
            for client in crowd { try client.sendRaw(Array("G".utf8)) }
            var http: [String: Any] = [:]
            for _ in 0..<200 {
                http = try #require(try board.call("stats")[object: "http"])
                // The refused close once their 503 is written.
                if http[int: "refused_per_address"] == 8 && http[int: "open"] == 4 { break }
                usleep(10_000)
            }
            #expect(http[int: "refused_per_address"] == 8, "\(http)")
            #expect(http[int: "open"] == 4, "\(http)")
            // A refused one reads why, naming the flag.
            let refused = try HTTP.readResponse(crowd[11])
            #expect(refused.status == 503 && refused.fields["connection"] == "close", "\(refused)")
            #expect(refused.body.contains("127.0.0.1") && refused.body.contains("--http-max-connections-per-address"),
                    "\(refused.body)")
            // Another address gets a slot: answered promptly, not after a timeout.
            let started = Date()
            let monitor = try TestClient(port: server.httpPort, timeout: 2, source: "127.0.0.2")
            let health = try HTTP.get(monitor, "/healthz")
            #expect(health.status == 200)
            #expect(Date().timeIntervalSince(started) < 1, "took \(Date().timeIntervalSince(started)) s")
            // The crowd's held connections are still served once they finish their heads.
            try crowd[0].sendRaw(Array("ET /readyz HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
            #expect(try HTTP.readResponse(crowd[0]).status == 200)
            #expect(try board.request("ping").isOK)
        }
    }

    @Test("an incomplete head gets 408 at the head timeout, not the hello timeout; a kept-alive connection may idle between heads")
    func headTimeout() throws {
        try withTestServer({ config in
            config.http = HTTPEndpoint(port: 0)
            config.httpHeadTimeoutMs = 300
            config.helloTimeoutMs = 30_000
        }) { server in
            let started = Date()
            let slow = try TestClient(port: server.httpPort, timeout: 3)
            try slow.sendRaw(Array("GET /healthz HTTP/1.1\r\nHost:".utf8))
            let response = try HTTP.readResponse(slow)
            #expect(response.status == 408)
            #expect(Date().timeIntervalSince(started) < 2.5, "took \(Date().timeIntervalSince(started)) s")
            #expect(slow.expectClosed())

            let kept = try TestClient(port: server.httpPort, timeout: 3)
            #expect(try HTTP.get(kept, "/healthz").status == 200)
            usleep(800_000)  // idle between heads: longer than the head timeout, shorter than the hello timeout
            #expect(try HTTP.get(kept, "/readyz").status == 200)
            // A later head has the head timeout from its first byte.
            try kept.sendRaw(Array("GET /readyz HTTP/1.1\r\n".utf8))
            #expect(try HTTP.readResponse(kept).status == 408)
        }
    }

    @Test("--http on a non-loopback address needs --http-public", arguments: ["0.0.0.0", "10.1.2.3", "::"])
    func publicNeedsFlag(host: String) throws {
        var config = ServerConfig()
        config.http = HTTPEndpoint(host: host, port: 9090)
        do {
            try config.validate()
            Issue.record("--http \(host) was accepted without --http-public")
        } catch {
            #expect(error.message.contains("--http-public") && error.message.contains(host), "\(error.message)")
        }
        config.httpPublic = true
        try config.validate()
        for loopback in ["127.0.0.1", "::1"] {
            config.httpPublic = false
            config.http = HTTPEndpoint(host: loopback, port: 9090)
            try config.validate()
        }
    }

    @Test("outatime-server --http 0.0.0.0:0 exits 64 naming --http-public; with it, it listens")
    func executableRefusesPublicHTTP() throws {
        let folder = try TemporaryFolder()
        let refused = try ServerProcess(["--port", "0", "--http", "0.0.0.0:0", "--db", folder.path("a.sqlite"),
                                         "--log-level", "error"])
        #expect(refused.waitForExit() == 64, "stderr: \(refused.stderrText)")
        #expect(refused.stderrText.contains("--http-public") && refused.stderrText.contains("0.0.0.0"), "\(refused.stderrText)")
        let allowed = try ServerProcess(["--port", "0", "--http", "0.0.0.0:0", "--http-public", "--db", folder.path("b.sqlite"),
                                         "--log-level", "error"])
        #expect(allowed.awaitListening() != nil, "stderr: \(allowed.stderrText)")
        allowed.send(signal: SIGTERM)
        #expect(allowed.waitForExit() == 0)
    }
}
