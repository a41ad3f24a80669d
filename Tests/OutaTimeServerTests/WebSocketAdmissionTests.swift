import OutaTimeTestSupport
import Foundation
import OutaTimeProtocol
import OutaTimeServer
import Testing

/// Who may open `GET /ws` (PROTOCOL.md "WebSocket transport", origin and
/// host rules): the page's own origin or `--http-allow-origin`; without
/// `--tokens` only loopback `Host` names; tokens never in the URL; a
/// public plaintext listener only with `--allow-plain-http`; refusals come
/// before the upgrade, with a status and a message that says what to do.
@Suite("WebSocket admission", .timeLimit(.minutes(3)))
struct WebSocketAdmissionTests {
    static func configure(_ config: inout ServerConfig) {
        config.http = HTTPEndpoint(port: 0)
    }

    /// (Host, Origin, status, words the refusal contains).
    static let cases: [(String, String?, Int, String)] = [
        ("localhost:1", nil, 101, ""),
        ("127.0.0.1", "http://127.0.0.1", 101, ""),
        ("[::1]:8080", "http://[::1]:8080", 101, ""),
        ("LOCALHOST:9", "http://localhost:9/", 101, ""),
        ("localhost:9", "http://localhost:10", 403, "http://localhost:9"),
        ("localhost:9", "https://localhost:9", 403, "--http-allow-origin"),
        ("localhost:9", "https://evil.example", 403, "--http-allow-origin"),
        ("localhost:9", "null", 403, "\"null\""),
        ("boards.example", nil, 403, "--tokens"),
        ("boards.example:9090", "http://boards.example:9090", 403, "loopback"),
        ("127.0.0.1.nip.io", nil, 403, "DNS rebinding"),
    ]

    @Test("Host and Origin: the page's own origin on a loopback name is upgraded, anything else is 403", arguments: 0..<11)
    func hostAndOrigin(index: Int) throws {
        let (host, origin, status, words) = Self.cases[index]
        try withTestServer(Self.configure) { server in
            let (answer, socket) = try WebSocketTestClient.handshake(port: server.httpPort, host: host, origin: origin)
            #expect(answer.status == status, "Host \(host), Origin \(origin ?? "-"): \(answer.status) \(answer.body)")
            if status == 101 {
                let web = WebSocketTestClient(socket: socket)
                #expect(try web.hello()["session"] != nil)
            } else {
                #expect(answer.body.contains(words), "\(answer.body)")
                #expect(socket.expectClosed())
                let stats = try server.connectReady().call("stats")
                #expect(stats[object: "http"]?[int: "websocket_refused"] == 1, "\(stats)")
                #expect(stats[object: "http"]?[int: "websocket_upgrades"] == 0, "\(stats)")
            }
        }
    }

    @Test("--http-allow-origin admits another origin (any spelling of it), and only that one")
    func allowedOrigin() throws {
        try withTestServer({
            Self.configure(&$0)
            $0.httpAllowedOrigins = [try! WebOrigin.parse(allowOrigin: "https://Boards.Example:443/")]
        }) { server in
            let allowed = try WebSocketTestClient.handshake(port: server.httpPort, origin: "https://boards.example").0
            #expect(allowed.status == 101, "\(allowed.body)")
            let other = try WebSocketTestClient.handshake(port: server.httpPort, origin: "https://boards.example:8443").0
            #expect(other.status == 403 && other.body.contains("https://boards.example"), "\(other.body)")
        }
    }

    @Test("with --tokens any Host name is served (the token in hello is the guard, a bad one gets Close 1008); the Origin rule still holds")
    func tokensLiftTheHostRule() throws {
        let token = String(repeating: "k", count: 32)
        try withTestServer({
            Self.configure(&$0)
            $0.tokens = [AccessToken(token: token, name: "Wall", role: .operate)]
        }) { server in
            let (answer, socket) = try WebSocketTestClient.handshake(port: server.httpPort, host: "boards.example",
                                                                      origin: "http://boards.example")
            #expect(answer.status == 101, "\(answer.body)")
            let web = WebSocketTestClient(socket: socket)
            try web.hello(token: token)
            let foreign = try WebSocketTestClient.handshake(port: server.httpPort, host: "boards.example",
                                                             origin: "http://evil.example").0
            #expect(foreign.status == 403)
            // A bad token: bye unauthorized, then Close 1008 (policy).
            let (_, badSocket) = try WebSocketTestClient.handshake(port: server.httpPort, host: "boards.example")
            let bad = WebSocketTestClient(socket: badSocket)
            try bad.sendMessage(["type": "hello", "id": 1, "protocol": 1, "token": "not-the-token"])
            let close = try bad.readClose(timeout: 10)
            #expect(bad.pushes.last?["reason"] as? String == "unauthorized", "\(bad.pushes)")
            #expect(close.code == 1008 && close.reason == "unauthorized", "\(close)")
        }
    }

    @Test("a token in the URL is refused 400 before upgrading: tokens go in hello", arguments: [
        "/ws?token=secret", "/ws?x=1&access_token=secret", "/ws?other=1",
    ])
    func noTokenInURL(path: String) throws {
        try withTestServer(Self.configure) { server in
            let answer = try WebSocketTestClient.handshake(port: server.httpPort, path: path).0
            #expect(answer.status == 400)
            #expect(answer.body.contains("hello"), "\(answer.body)")
            #expect(!answer.body.contains("secret"), "the refusal does not repeat the token: \(answer.body)")
        }
    }

    @Test("a request that is not a WebSocket upgrade gets the handshake's refusal (400, or 426 for another version)")
    func notAnUpgrade() throws {
        try withTestServer(Self.configure) { server in
            let plain = try TestClient(port: server.httpPort)
            let get = try HTTPListenerTests.get(plain, "/ws")
            #expect(get.status == 400 && get.body.contains("Upgrade"), "\(get.body)")
            let version = try WebSocketTestClient.handshake(port: server.httpPort, extra: "Sec-WebSocket-Version: 8\r\n").0
            #expect(version.status == 426 || version.status == 400, "\(version.status) \(version.body)")
        }
    }

    @Test("a non-loopback plaintext listener (--http-public) serves /metrics but /ws only with --allow-plain-http",
          arguments: [false, true])
    func plainPublicListener(allowPlain: Bool) throws {
        try withTestServer({
            $0.http = HTTPEndpoint(host: "0.0.0.0", port: 0)
            $0.httpPublic = true
            $0.allowPlainHTTP = allowPlain
        }) { server in
            let metrics = try HTTPListenerTests.get(try TestClient(port: server.httpPort), "/healthz")
            #expect(metrics.status == 200)
            let answer = try WebSocketTestClient.handshake(port: server.httpPort).0
            if allowPlain {
                #expect(answer.status == 101, "\(answer.body)")
            } else {
                #expect(answer.status == 403 && answer.body.contains("--allow-plain-http"), "\(answer.status) \(answer.body)")
            }
        }
    }

    @Test("connection limits count WebSocket sessions: over the per-address limit, error and bye server_busy, Close 1013")
    func perAddressLimit() throws {
        try withTestServer({ Self.configure(&$0); $0.maxConnectionsPerAddress = 2 }) { server in
            let tcp = try server.connectReady()
            let web = try WebSocketTestClient(port: server.httpPort)
            try web.hello()
            let refused = try WebSocketTestClient(port: server.httpPort)
            let error = try refused.readUntil(type: "error")
            #expect(error[object: "error"]?["code"] as? String == "server_busy", "\(error)")
            #expect(try refused.readUntil(type: "bye")["reason"] as? String == "server_busy")
            let close = try refused.readClose()
            #expect(close.code == 1013 && close.reason == "server_busy", "\(close)")
            #expect(refused.socket.expectClosed())
            let stats = try tcp.call("stats")
            #expect(stats[object: "connections_refused"]?[int: "max_connections_per_address"] == 1, "\(stats)")
        }
    }

    @Test("--http-allow-origin takes scheme://host[:port] and nothing else; a bad value exits 64 naming it", arguments: [
        "boards.example", "ftp://boards.example", "https://boards.example/board", "https://user@boards.example",
        "https://boards.example:99999", "https://", "null",
    ])
    func badAllowOrigin(value: String) throws {
        #expect(WebOrigin(value) == nil)
        let server = try ServerProcess(["--port", "0", "--http", "0", "--http-allow-origin", value])
        #expect(server.waitForExit() == 64)
        #expect(server.stderrText.contains("--http-allow-origin \(value.debugDescription) is not an origin"),
                "stderr: \(server.stderrText)")
    }
}
