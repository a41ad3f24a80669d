import Foundation
import OutaTimeProtocol
import OutaTimeServer
import OutaTimeTestKit
import OutaTimeTestSupport
import Testing

/// `--proxy-from`: PROXY protocol headers written by hand on real sockets.
/// The test's own connections come from 127.0.0.1 (the trusted "balancer")
/// or from another loopback address (not trusted).
@Suite("PROXY protocol", .timeLimit(.minutes(3)))
struct ProxyProtocolTests {
    static let good = "operator-secret-1955"

    /// A server trusting 127.0.0.1, logging at debug into `logs`.
    private func withProxiedServer(_ logs: CapturedLogs, _ configure: (inout ServerConfig) -> Void = { _ in },
                                   _ body: (TestServer) throws -> Void) throws {
        let folder = try TemporaryFolder()
        let server = try TestServer(databasePath: folder.path("outatime.sqlite"), logger: logs.logger(level: .debug)) {
            $0.proxyFrom = [try! AddressRange("127.0.0.1")]
            configure(&$0)
        }
        defer { server.stop() }
        try body(server)
    }

    private func helloFrame(id: Int = 1, token: String? = nil) throws -> [UInt8] {
        var fields: [String: Any] = ["type": "hello", "id": id, "protocol": 1, "name": "via-proxy"]
        if let token { fields["token"] = token }
        return TestClient.framed(try TestClient.body(fields))
    }

    @Test("v1 and v2 headers name the client: --max-connections-per-address counts the client's address, not the balancer's")
    func clientAddressCounts() throws {
        let logs = CapturedLogs()
        try withProxiedServer(logs, { $0.maxConnectionsPerAddress = 1 }) { server in
            // The header and hello in one write: the bytes after the header are the session's.
            let first = try server.connect()
            try first.sendRaw(ProxyHeaders.v1("203.0.113.7") + helloFrame())
            #expect(try first.readReply(id: 1).isOK)
            // v2, dripped one byte at a time, then hello on its own.
            let second = try server.connect()
            for byte in ProxyHeaders.v2("203.0.113.8") { try second.sendRaw([byte]) }
            try second.hello()
            // v2 LOCAL: the balancer's own address (127.0.0.1) stands.
            let local = try server.connect()
            try local.sendRaw(ProxyHeaders.v2Local)
            try local.hello()
            // A second connection of 203.0.113.7 is one too many for it.
            let third = try server.connect()
            try third.sendRaw(ProxyHeaders.v2("203.0.113.7"))
            let error = try third.readFrame()
            #expect(error.errorCode == .serverBusy, "got \(describe([error]))")
            #expect((error.errorMessage ?? "").contains("address 203.0.113.7 holds its maximum of 1"), "\(error)")
            #expect(try first.request("ping").isOK)
            #expect(logs.all.contains { $0.contains("debug hello ") && $0.contains("peer=203.0.113.8") }, "\(logs.all)")
            #expect(logs.all.contains { $0.contains("debug hello ") && $0.contains("peer=127.0.0.1") })
        }
    }

    @Test("failed hellos through the balancer throttle their client, not every client of the balancer")
    func throttlePerClient() throws {
        let logs = CapturedLogs()
        let tokens = try TokensFile([tokenEntry(Self.good, "Otto", "operate")])
        try withProxiedServer(logs, { tokens.configure(&$0); $0.maxFailedHellos = 1; $0.failedHelloDelayMs = 5
                                      $0.maxFailedHelloDelayMs = 5 }) { server in
            func hello(as client: String, token: String) throws -> [String: Any] {
                let connection = try server.connect()
                try connection.sendRaw(ProxyHeaders.v2(client) + helloFrame(token: token))
                return try connection.readReply(id: 1)
            }
            #expect(try hello(as: "198.51.100.1", token: "guess").errorCode == .unauthorized)
            #expect(try hello(as: "198.51.100.2", token: Self.good).isOK)
            let watcher = try server.connect()
            try watcher.sendRaw(ProxyHeaders.v1("198.51.100.3"))
            try watcher.hello(token: Self.good)
            #expect(try watcher.call("stats")[int: "hellos_throttled"] == 0)
            #expect(try hello(as: "198.51.100.1", token: Self.good).isOK)
            #expect(try watcher.call("stats")[int: "hellos_throttled"] == 1)
            #expect(logs.all.contains { $0.contains("hello throttled") && $0.contains("peer=198.51.100.1") }, "\(logs.all)")
        }
        withExtendedLifetime(tokens) {}
    }

    @Test("a PROXY header from an address not in --proxy-from closes the connection with a log line (plaintext and TLS)")
    func untrusted() throws {
        let logs = CapturedLogs()
        let pki = try TestPKI()
        let identity = try pki.issue("localhost", names: ["localhost"])
        try withProxiedServer(logs, {
            $0.tlsPort = 0
            $0.tls = TLSFiles(certificateFile: identity.certificateFile, privateKeyFile: identity.keyFile)
        }) { server in
            for header in [ProxyHeaders.v1("203.0.113.7"), ProxyHeaders.v2("203.0.113.7")] {
                let client = try TestClient(port: server.port, source: "127.0.0.2")
                try client.sendRaw(header + helloFrame())
                #expect(try client.readUntil(type: "bye")["reason"] as? String == "protocol_error")
                #expect(client.expectClosed())
            }
            let tls = try TestClient(port: server.tlsPort, source: "127.0.0.3")
            try tls.sendRaw(ProxyHeaders.v2("203.0.113.7"))
            #expect(tls.closedAfterAnyBytes())
            let refusals = logs.all.filter { $0.contains("PROXY header from an address --proxy-from does not trust") }
            #expect(refusals.count == 3, "\(logs.all.suffix(20))")
            #expect(refusals.contains { $0.contains("peer=127.0.0.2") } && refusals.contains { $0.contains("peer=127.0.0.3") })
            #expect(refusals.allSatisfy { $0.contains("proxy_from=127.0.0.1/32") })
            // A plain client from there is served as usual.
            let plain = try TestClient(port: server.port, source: "127.0.0.2")
            try plain.hello()
            #expect(try plain.call("stats")[int: "proxy_headers_refused"] == 3)
        }
    }

    @Test("from a trusted balancer a header is required: a malformed one, none, or bytes of something else close with a log line")
    func malformedFromTrusted() throws {
        let logs = CapturedLogs()
        try withProxiedServer(logs, { $0.helloTimeoutMs = 300 }) { server in
            let cases: [([UInt8], String)] = [
                (Array("PROXY TCP4 203.0.113.999 127.0.0.1 1 2\r\n".utf8), "not IPv4"),
                (Array("PROXY TCP4 203.0.113.7 127.0.0.1 1 2\n".utf8), "bare LF"),
                (Array(ProxyHeaders.v2("203.0.113.7").prefix(12)) + [0x22, 0x11, 0x00, 0x00], "command 2"),
                (try helloFrame(), "does not begin with a PROXY header"),
            ]
            for (bytes, reason) in cases {
                let client = try server.connect()
                try client.sendRaw(bytes)
                #expect(client.closedAfterAnyBytes(), "not closed after \(bytes.count) bytes (\(reason))")
                #expect(logs.all.contains { $0.contains("PROXY header refused") && $0.contains(reason) },
                        "no log naming '\(reason)': \(logs.all.suffix(5))")
            }
            // Part of a header, then nothing: closed at the hello timeout; others go on meanwhile.
            let silent = try server.connect()
            try silent.sendRaw(Array("PROXY TCP4 203.0".utf8))
            let other = try server.connect()
            try other.sendRaw(ProxyHeaders.v1("203.0.113.50"))
            try other.hello()
            #expect(silent.closedAfterAnyBytes())
            #expect(logs.all.contains { $0.contains("no PROXY header within the hello timeout") && $0.contains("received_bytes=16") })
            #expect(try other.request("ping").isOK)
            #expect(try other.call("stats")[int: "proxy_headers_refused"] == 5)
        }
    }

    @Test("TLS behind PROXY: the header in clear, then the handshake; the client's address stands")
    func tlsBehindProxy() throws {
        let logs = CapturedLogs()
        let pki = try TestPKI()
        let identity = try pki.issue("localhost", names: ["localhost"])
        try withProxiedServer(logs, {
            $0.tlsPort = 0
            $0.tls = TLSFiles(certificateFile: identity.certificateFile, privateKeyFile: identity.keyFile)
        }) { server in
            for header in [ProxyHeaders.v1("192.0.2.44"), ProxyHeaders.v2("192.0.2.45")] {
                let run = try PythonTLSHello.run(port: server.tlsPort, caFile: pki.caFile, header: header)
                #expect(run.status == 0, "stderr: \(run.errors)")
                #expect(run.output.contains("\"ok\":true"), "stdout: \(run.output)")
            }
            #expect(logs.all.contains { $0.contains("debug hello ") && $0.contains("peer=192.0.2.44") }, "\(logs.all.suffix(10))")
            #expect(logs.all.contains { $0.contains("debug hello ") && $0.contains("peer=192.0.2.45") })
            // Without the header the trusted balancer's TLS connection is refused.
            let bare = try PythonTLSHello.run(port: server.tlsPort, caFile: pki.caFile, header: [])
            #expect(bare.status != 0)
            #expect(logs.all.contains { $0.contains("PROXY header refused") && $0.contains("listener=tls") })
        }
    }

    @Test("HTTP behind PROXY: the client's address counts in --http-max-connections-per-address; no header, no answer")
    func httpBehindProxy() throws {
        let logs = CapturedLogs()
        try withProxiedServer(logs, { $0.http = HTTPEndpoint(port: 0); $0.maxHTTPConnectionsPerAddress = 1 }) { server in
            func get(_ client: TestClient, header: [UInt8]) throws -> HTTPListenerTests.Response {
                try client.sendRaw(header + Array("GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8))
                return try HTTPListenerTests.readResponse(client)
            }
            // Two clients through the one balancer address: each has its own count.
            let first = try TestClient(port: server.httpPort)
            #expect(try get(first, header: ProxyHeaders.v1("203.0.113.7")).status == 200)
            let second = try TestClient(port: server.httpPort)
            #expect(try get(second, header: ProxyHeaders.v2("203.0.113.8")).status == 200)
            // A second connection of 203.0.113.7 is over its cap of 1.
            let third = try TestClient(port: server.httpPort)
            let refused = try get(third, header: ProxyHeaders.v1("203.0.113.7"))
            #expect(refused.status == 503)
            #expect(refused.body.contains("too many HTTP connections from 203.0.113.7"), "\(refused.body)")
            // The kept-alive first connection is still served.
            #expect(try HTTPListenerTests.get(first, "/healthz").status == 200)
            // From the trusted balancer without a header: closed, no HTTP answer.
            let bare = try TestClient(port: server.httpPort)
            try bare.sendRaw(Array("GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8))
            #expect(try bare.readSome().isEmpty)
            #expect(logs.all.contains { $0.contains("PROXY header refused") && $0.contains("listener=http") }, "\(logs.all.suffix(5))")
        }
    }
}
