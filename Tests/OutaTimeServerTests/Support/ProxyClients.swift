import Foundation
import OutaTimeProtocol
import OutaTimeTestSupport

/// PROXY protocol headers as a balancer writes them, for tests.
enum ProxyHeaders {
    /// haproxy's `send-proxy` line for a TCP4 client.
    static func v1(_ client: String, port: Int = 50_000, to server: String = "127.0.0.1", serverPort: Int = 1985) -> [UInt8] {
        Array("PROXY TCP4 \(client) \(server) \(port) \(serverPort)\r\n".utf8)
    }

    /// haproxy's `send-proxy-v2` header for a TCP4 client, with one TLV.
    static func v2(_ client: String, port: Int = 50_000) -> [UInt8] {
        let octets = client.split(separator: ".").compactMap { UInt8($0) }
        precondition(octets.count == 4, "an IPv4 address")
        let body = octets + [127, 0, 0, 1, UInt8(port >> 8), UInt8(port & 0xFF), 0x07, 0xC1]
            + [0x04, 0x00, 0x01, 0x2A]  // a NOOP TLV, skipped
        return ProxyHeader.version2Signature + [0x21, 0x11, 0x00, UInt8(body.count)] + body
    }

    /// v2 LOCAL (a balancer's own health check): no client address.
    static let v2Local: [UInt8] = ProxyHeader.version2Signature + [0x20, 0x00, 0x00, 0x00]
}

extension TestClient {
    /// True when the server closes the connection (whatever it sent first,
    /// e.g. a TLS alert) within `timeout`.
    func closedAfterAnyBytes(timeout: Double = TestClient.defaultTimeout) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            guard let bytes = try? readSome(timeout: max(0.01, deadline.timeIntervalSinceNow)) else { return false }
            if bytes.isEmpty { return true }
        }
        return false
    }
}

/// A TLS client in Python (the standard `ssl` module) that may send bytes
/// in clear first (a PROXY header, as haproxy does before TLS): connects
/// from `source`, sends `hello` with `token` and prints the reply's JSON.
enum PythonTLSHello {
    static let script = """
        import json, socket, ssl, struct, sys
        port, ca, header, source, token = int(sys.argv[1]), sys.argv[2], bytes.fromhex(sys.argv[3]), sys.argv[4], sys.argv[5]
        raw = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
        raw.sendall(header)
        context = ssl.create_default_context(cafile=ca)
        tls = context.wrap_socket(raw, server_hostname="localhost")
        hello = {"type": "hello", "id": 1, "protocol": 1, "name": "tls-proxy"}
        if token:
            hello["token"] = token
        body = json.dumps(hello).encode()
        tls.sendall(struct.pack(">I", len(body)) + body)
        def read(n):
            data = b""
            while len(data) < n:
                chunk = tls.recv(n - len(data))
                if not chunk:
                    raise SystemExit("closed")
                data += chunk
            return data
        length = struct.unpack(">I", read(4))[0]
        print(read(length).decode())
        """

    /// Runs the script; its stdout (the reply) and exit status.
    static func run(port: Int, caFile: String, header: [UInt8], source: String = "127.0.0.1",
                    token: String = "") throws -> (status: Int32, output: String, errors: String) {
        let folder = try TemporaryFolder()
        let path = folder.path("tls_hello.py")
        try script.write(toFile: path, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [path, "\(port)", caFile, header.map { String(format: "%02x", $0) }.joined(), source, token]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        let errors = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self), String(decoding: errors, as: UTF8.self))
    }
}

