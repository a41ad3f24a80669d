import OutaTimeProtocol
import Testing
import UV

/// The opening handshake (RFC 6455 §4): the §1.3 example, the 101 answer,
/// and each refusal with its status and a message naming the bad value.
@Suite("WebSocket handshake")
struct WebSocketHandshakeTests {
    static let key = "dGhlIHNhbXBsZSBub25jZQ=="

    /// The head of `text` as the HTTP listener's parser reads it.
    static func head(_ lines: [String], requestLine: String = "GET /ws HTTP/1.1") -> HTTPRequestHead {
        var parser = HTTPHeadParser()
        let text = ([requestLine] + lines).joined(separator: "\r\n") + "\r\n\r\n"
        guard case .head(let head, _) = Array(text.utf8).withUnsafeBytes({ parser.parse($0) }) else {
            fatalError("not a head: \(text)")
        }
        return head
    }

    static let good = ["Host: 127.0.0.1:8080", "Upgrade: websocket", "Connection: Upgrade",
                       "Sec-WebSocket-Key: \(key)", "Sec-WebSocket-Version: 13"]

    static func replacing(_ name: String, with line: String?) -> [String] {
        good.filter { !$0.hasPrefix(name + ":") } + (line.map { [$0] } ?? [])
    }

    // (The brief of issue 28 quoted the accept as "s3pPLMBiTxaQ9kYGzzpK+xOo0Ys="; RFC 6455 §1.3 says the value below.)
    @Test("§1.3: key dGhlIHNhbXBsZSBub25jZQ== is answered with s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    func rfcExample() {
        #expect(WebSocketHandshake.accept(key: Self.key, sha1: { SHA1.digest($0) }) == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        #expect(SHA1.digest(Array("abc".utf8)).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
            == "a9993e364706816aba3e25717850c26c9cd0d89d")
    }

    @Test("a browser's upgrade is accepted; the 101 carries the accept and no extension or subprotocol")
    func accepts() throws {
        let head = Self.head(Self.good + ["Origin: http://127.0.0.1:8080", "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits",
                                          "Sec-WebSocket-Protocol: chat", "Connection: keep-alive"])
        #expect(try WebSocketHandshake.validate(head).get() == Self.key)
        // Options in any case, in lists (Firefox sends "keep-alive, Upgrade").
        let firefox = Self.head(Self.replacing("Connection", with: "Connection: keep-alive, Upgrade")
                                    .map { $0 == "Upgrade: websocket" ? "Upgrade: WebSocket" : $0 })
        #expect(try WebSocketHandshake.validate(firefox).get() == Self.key)
        let response = String(decoding: WebSocketHandshake.response(accept: "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="), as: UTF8.self)
        #expect(response == "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n")
    }

    @Test("refusals: 400 for a bad upgrade, 426 with Sec-WebSocket-Version: 13 for another version", arguments: [
        (["Host: a"], "HEAD /ws HTTP/1.1", 400, "HEAD"),
        (["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: \(key)", "Sec-WebSocket-Version: 13"], "GET /ws HTTP/1.0", 400, "HTTP/1.0"),
        (replacing("Upgrade", with: nil), nil, 400, "no Upgrade"),
        (replacing("Upgrade", with: "Upgrade: h2c"), nil, 400, "h2c"),
        (replacing("Connection", with: "Connection: keep-alive"), nil, 400, "keep-alive"),
        (replacing("Sec-WebSocket-Version", with: nil), nil, 400, "no Sec-WebSocket-Version"),
        (replacing("Sec-WebSocket-Version", with: "Sec-WebSocket-Version: 8"), nil, 426, "'8'"),
        (replacing("Sec-WebSocket-Key", with: nil), nil, 400, "no Sec-WebSocket-Key"),
        (replacing("Sec-WebSocket-Key", with: "Sec-WebSocket-Key: c2hvcnQ="), nil, 400, "c2hvcnQ="),
        (replacing("Sec-WebSocket-Key", with: "Sec-WebSocket-Key: !!!!!!!!!!!!!!!!!!!!!!=="), nil, 400, "!!!!"),
        (good + ["Sec-WebSocket-Key: \(key)"], nil, 400, "2 Sec-WebSocket-Key"),
    ] as [([String], String?, Int, String)])
    func refusals(lines: [String], requestLine: String?, status: Int, named: String) {
        let head = requestLine.map { Self.head(lines, requestLine: $0) } ?? Self.head(lines)
        guard case .failure(let refusal) = WebSocketHandshake.validate(head) else {
            Issue.record("accepted: \(lines)")
            return
        }
        #expect(refusal.status.rawValue == status)
        #expect(refusal.message.contains(named), "\(refusal.message)")
        #expect(refusal.fields == (status == 426 ? [HTTPRequestHead.Field(name: "Sec-WebSocket-Version", value: "13")] : []))
    }
}
