import OutaTimeProtocol
import Testing

/// The HTTP listener's request-head parser: what it accepts, each way it
/// refuses (with the status), its bounds, and heads arriving in pieces.
@Suite("HTTP head parser")
struct HTTPHeadParserTests {
    static func parse(_ text: String, limits: HTTPHeadParser.Limits = .init()) -> HTTPHeadParser.Outcome {
        var parser = HTTPHeadParser(limits: limits)
        return Array(text.utf8).withUnsafeBytes { parser.parse($0) }
    }

    static func status(_ text: String, limits: HTTPHeadParser.Limits = .init()) -> Int? {
        if case .refused(let error) = parse(text, limits: limits) { return error.status.rawValue }
        return nil
    }

    @Test("a GET with fields: method, path, query, version, fields in order, the head's length")
    func accepts() throws {
        let text = "GET /metrics?name=ticks HTTP/1.1\r\nHost: 127.0.0.1:9090\r\nAccept:text/plain \r\nX-Empty:\r\n\r\nNEXT"
        guard case .head(let head, let length) = Self.parse(text) else {
            Issue.record("refused: \(Self.parse(text))")
            return
        }
        #expect(length == text.utf8.count - 4)
        #expect(head.method == .get && head.path == "/metrics" && head.query == "name=ticks" && head.version == .http11)
        #expect(head.fields == [.init(name: "host", value: "127.0.0.1:9090"), .init(name: "accept", value: "text/plain"),
                                .init(name: "x-empty", value: "")])
        #expect(head.field("ACCEPT") == "text/plain")
        #expect(head.keepsAlive)
    }

    @Test("HEAD, HTTP/1.0 without Host, leading empty lines; keep-alive follows the version and Connection")
    func variants() {
        guard case .head(let head, _) = Self.parse("\r\n\r\nHEAD /healthz HTTP/1.0\r\n\r\n") else {
            Issue.record("refused")
            return
        }
        #expect(head.method == .head && head.version == .http10 && !head.keepsAlive)
        if case .head(let kept, _) = Self.parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n") {
            #expect(kept.keepsAlive)
        } else { Issue.record("refused") }
        if case .head(let closing, _) = Self.parse("GET / HTTP/1.1\r\nHost: a\r\nConnection: foo, close\r\n\r\n") {
            #expect(!closing.keepsAlive)
        } else { Issue.record("refused") }
    }

    @Test("each way of refusing, with its status", arguments: [
        ("POST /metrics HTTP/1.1\r\nHost: a\r\n\r\n", 405),
        ("DELETE / HTTP/1.1\r\nHost: a\r\n\r\n", 405),
        ("GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505),
        ("GET / HTTP/1.1\r\n\r\n", 400),                                   // no Host
        ("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),             // two Hosts
        ("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello", 400),
        ("GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400),                        // space before the colon
        ("GET / HTTP/1.1\r\nHost a\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a\u{1}b\r\n\r\n", 400),
        ("GET / HTTP/1.1\nHost: a\r\n\r\n", 400),                           // bare LF
        ("GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400),                        // two spaces
        ("GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n", 400),                 // absolute form
        ("GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        ("GET /é HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        ("GET / HTTX/1.1\r\nHost: a\r\n\r\n", 400),
        ("G(T / HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    ])
    func refusals(text: String, status: Int) {
        #expect(Self.status(text) == status, "\(text.debugDescription): \(Self.parse(text))")
    }

    @Test("bounds: head bytes and field count give 431, at the limit it passes")
    func bounds() {
        let limits = HTTPHeadParser.Limits(maxHeadBytes: 256, maxHeaders: 4)
        let four = "GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n"
        #expect(Self.status(four, limits: limits) == nil)
        #expect(Self.status("GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n", limits: limits) == 431)
        let base = "GET / HTTP/1.1\r\nHost: a\r\nX: \r\n\r\n"
        let exact = base.replacingOccurrences(of: "X: ", with: "X: " + String(repeating: "v", count: 256 - base.utf8.count))
        #expect(exact.utf8.count == 256)
        #expect(Self.status(exact, limits: limits) == nil)
        let over = exact.replacingOccurrences(of: "X: ", with: "X: v")
        #expect(Self.status(over, limits: limits) == 431)
        // Without its end: 431 once past the bound, not before.
        #expect(Self.status("GET / HTTP/1.1\r\nHost: a\r\nX: " + String(repeating: "v", count: 200), limits: limits) == nil)
        #expect(Self.status("GET / HTTP/1.1\r\nHost: a\r\nX: " + String(repeating: "v", count: 300), limits: limits) == 431)
    }

    @Test("not HTTP at all is refused at once, before the head could end")
    func earlyRefusal() {
        #expect(Self.status("\u{0}\u{0}\u{0}\u{5}{\"type\"") == 400)
        #expect(Self.status(" GET") == 400)
        #expect(Self.status("GE") == nil)
        #expect(Self.status("\r") == nil)
        #expect(Self.status("\r\n") == nil)
        // A line ended by LF alone: that head can never end in CRLF CRLF.
        #expect(Self.status("GET /healthz HTTP/1.1\nHost: x\n\n") == 400)
        #expect(Self.status("GET /healthz HTTP/1.1\n") == 400)
        #expect(Self.status("GET /healthz HTTP/1.1\r\nHost: x\n") == 400)
        #expect(Self.status("GET /healthz HTTP/1.1\r\nHost: x\r") == nil)
    }

    @Test("a head sent a byte at a time is read once complete, searched in O(length)")
    func incremental() {
        let text = Array("GET /readyz HTTP/1.1\r\nHost: localhost\r\n\r\nGET".utf8)
        var parser = HTTPHeadParser()
        var outcome = HTTPHeadParser.Outcome.needMore
        var received: [UInt8] = []
        for byte in text {
            received.append(byte)
            outcome = received.withUnsafeBytes { parser.parse($0) }
            if case .head = outcome { break }
            #expect(outcome == .needMore)
        }
        guard case .head(let head, let length) = outcome else {
            Issue.record("never complete: \(outcome)")
            return
        }
        #expect(head.path == "/readyz" && length == text.count - 3 && received.count == length)
    }
}
