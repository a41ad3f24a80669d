import Foundation
import OutaTimeServer
import OutaTimeTestKit
import OutaTimeTestSupport
import Testing

/// `--http-tls`: the HTTP listener over TLS with the server's certificate,
/// so that `/ws` is `wss://` (PROTOCOL.md §1, "WebSocket"). The client is
/// Python's `ssl` with a hand-made RFC 6455 frame or two: an independent
/// TLS stack and framing.
@Suite("WebSocket over TLS", .timeLimit(.minutes(3)))
struct WebSocketTLSTests {
    static let script = #"""
        import base64, json, os, socket, ssl, struct, sys
        port, ca, origin = int(sys.argv[1]), sys.argv[2], sys.argv[3]
        raw = socket.create_connection(("127.0.0.1", port), timeout=30)
        tls = ssl.create_default_context(cafile=ca).wrap_socket(raw, server_hostname="localhost")
        key = base64.b64encode(os.urandom(16)).decode()
        tls.sendall(("GET /ws HTTP/1.1\r\nHost: localhost:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nOrigin: %s\r\n\r\n" % (port, key, origin)).encode())
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            c = tls.recv(1)
            if not c:
                raise SystemExit("closed during the handshake: %r" % head)
            head += c
        status = head.split(b" ")[1].decode()
        if status != "101":
            print(json.dumps({"status": status}))
            sys.exit()
        def send(obj):
            body = json.dumps(obj).encode()
            mask = os.urandom(4)
            tls.sendall(bytes([0x81, 0x80 | len(body)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(body)))
        buf = b""
        def read(n):
            global buf
            while len(buf) < n:
                c = tls.recv(65536)
                if not c:
                    raise SystemExit("closed")
                buf += c
            out, buf = buf[:n], buf[n:]
            return out
        def message():
            b0, b1 = read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", read(8))[0]
            return json.loads(read(n))
        send({"type": "hello", "id": 1, "protocol": 1, "name": "tls wall"})
        hello = message()
        send({"type": "ping", "id": 2})
        print(json.dumps({"status": status, "hello": hello, "ping": message()}))
        """#

    /// Runs the client against `port`; its one line of JSON.
    static func run(port: Int, caFile: String, origin: String) throws -> [String: Any] {
        let folder = try TemporaryFolder()
        let path = folder.path("wss_client.py")
        try script.write(toFile: path, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [path, "\(port)", caFile, origin]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        // The client's own socket timeout (30 s) bounds the run.
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        let line = text.split(separator: "\n").last.map(String.init) ?? ""
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw TestClientError.failed("the wss client said: \(text) (exit \(process.terminationStatus))")
        }
        return object
    }

    @Test("wss:// over --http-tls: hello and ping over WebSocket; an http:// origin is not the page's own (403)")
    func secureWebSocket() throws {
        let pki = try TestPKI()
        let identity = try pki.issue("localhost", names: ["localhost"])
        try withTestServer({
            $0.http = HTTPEndpoint(port: 0)
            $0.httpTLS = true
            $0.tls = TLSFiles(certificateFile: identity.certificateFile, privateKeyFile: identity.keyFile)
        }) { server in
            let answer = try Self.run(port: server.httpPort, caFile: pki.caFile, origin: "https://localhost:\(server.httpPort)")
            #expect(answer["status"] as? String == "101", "\(answer)")
            #expect((answer["hello"] as? [String: Any])?["ok"] as? Bool == true, "\(answer)")
            #expect((answer["ping"] as? [String: Any])?["ok"] as? Bool == true, "\(answer)")
            let plainOrigin = try Self.run(port: server.httpPort, caFile: pki.caFile, origin: "http://localhost:\(server.httpPort)")
            #expect(plainOrigin["status"] as? String == "403", "\(plainOrigin)")
            // The protocol's own TCP listener is untouched.
            #expect(try server.connectReady().request("ping").isOK)
        }
    }

    @Test("--http-tls needs --http and the certificate: the server refuses to start naming what is missing", arguments: [
        (["--http-tls", "--http", "0"], "--http-tls needs --tls-cert FILE and --tls-key FILE"),
        (["--http-tls"], "--http-tls needs --http HOST:PORT"),
    ])
    func flagChecks(arguments: [String], message: String) throws {
        let server = try ServerProcess(["--port", "0"] + arguments)
        #expect(server.waitForExit() == 64)
        #expect(server.stderrText.contains(message), "stderr: \(server.stderrText)")
    }
}
