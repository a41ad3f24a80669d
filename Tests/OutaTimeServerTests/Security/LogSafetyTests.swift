import Foundation
import Logging
@testable import OutaTimeServer
import OutaTimeTestSupport
import Testing

/// Client text in the logs: quoted so it cannot forge fields, escaped so it
/// cannot steer a terminal; format characters refused in names; failed
/// hellos logged at notice, rate-limited.
@Suite("log safety", .timeLimit(.minutes(3)))
struct LogSafetyTests {
    /// A tokens file the guessers never match.
    static func tokens() throws -> TokensFile {
        try TokensFile([["sha256": String(repeating: "cd", count: 32), "name": "Doc", "role": "admin"]])
    }

    @Test("a failed hello is logged at notice with the peer; a forged name comes out as one quoted value")
    func forgedName() throws {
        let file = try Self.tokens()
        let server = try ServerProcess(["--port", "0", "--tokens", file.path, "--log-level", "notice"])
        let listening = try #require(server.awaitListening(), "stderr: \(server.stderrText)")
        let guesser = try TestClient(port: listening.port)
        let reply = try guesser.request("hello", ["protocol": 1, "token": "guess", "name": "Marty role=admin conn.id=FAKE",
                                                  "client": "cli\"ent x=\\y"])
        #expect(reply.errorCode == .unauthorized)
        let line = try #require(FileSafetyTests.logged(server, ["hello refused"]), "stderr: \(server.stderrText)")
        #expect(line.contains(" notice "), "\(line)")
        #expect(line.contains(" peer=127.0.0.1 "), "\(line)")
        #expect(line.contains(#" name="Marty role=admin conn.id=FAKE" "#), "\(line)")
        #expect(line.contains(#" client="cli\"ent x=\\y" "#), "\(line)")
        #expect(!line.contains(" role=admin conn.id=FAKE [") && line.components(separatedBy: "conn.id=").count == 3,
                "exactly the real conn.id and the quoted one: \(line)")
        #expect(line.contains(#"problem="the token is not valid""#), "\(line)")
        #expect(!line.contains("guess"), "the token is never logged: \(line)")
        server.send(signal: SIGTERM)
        #expect(server.waitForExit() == 0, "stderr: \(server.stderrText)")
    }

    @Test("failed hellos are logged at most 10 per 10 s; the rest only counted")
    func rateLimited() throws {
        let file = try Self.tokens()
        let server = try ServerProcess(["--port", "0", "--tokens", file.path, "--max-failed-hellos", "0"])
        let listening = try #require(server.awaitListening(), "stderr: \(server.stderrText)")
        let guessers = try (0..<14).map { _ in try TestClient(port: listening.port) }
        for (index, guesser) in guessers.enumerated() {
            try guesser.sendFrame(["type": "hello", "id": 1, "protocol": 1, "token": "guess-\(index)"])
        }
        for guesser in guessers { #expect(try guesser.readReply(id: 1).errorCode == .unauthorized) }
        usleep(200_000)
        let lines = server.stderrText.split(separator: "\n").filter { $0.contains("hello refused") }
        #expect(lines.count == 10, "stderr: \(server.stderrText)")
        server.send(signal: SIGTERM)
        #expect(server.waitForExit() == 0, "stderr: \(server.stderrText)")
    }

    @Test("the limiter: 3 a window, the first line of the next window tells how many were dropped")
    func limiter() {
        var limit = LogRateLimit(limit: 3, windowMs: 1000)
        #expect((0..<5).map { _ in limit.admit(now: 100) } == [0, 0, 0, nil, nil])
        #expect(limit.admit(now: 1099) == nil)
        #expect(limit.admit(now: 1100) == 3)
        #expect(limit.admit(now: 1100) == 0)
    }

    @Test("a name with a bidi override (U+202E) is refused in hello and in the tokens file, naming the code point",
          arguments: ["Marty\u{202E}nimda", "\u{2066}Doc", "Bi\u{200B}ff", "Cl\u{00AD}ara"])
    func formatCharacters(name: String) throws {
        try withTestServer { server in
            let client = try TestClient(port: server.port)
            let reply = try client.request("hello", ["protocol": 1, "name": name])
            #expect(reply.errorCode == .invalidRequest)
            let code = String(name.unicodeScalars.first { $0.properties.generalCategory == .format }!.value, radix: 16, uppercase: true)
            let expected = "U+" + String(repeating: "0", count: max(0, 4 - code.count)) + code
            #expect(reply.errorMessage?.contains("field 'name' must not contain Unicode format characters") == true
                    && reply.errorMessage?.contains(expected) == true, "\(reply.errorMessage ?? "")")
            let client2 = try TestClient(port: server.port)
            #expect(try client2.request("hello", ["protocol": 1, "client": name]).errorCode == .invalidRequest)
        }
        try expectTokensFileRefused(#"[{"sha256": "\#(String(repeating: "ab", count: 32))", "name": "\#(name)", "role": "watch"}]"#,
                                    "'name' must not contain Unicode format characters", secrets: [])
    }

    @Test("emoji joiners (U+200D) and Persian's non-joiner (U+200C) stay allowed in names")
    func joiners() throws {
        try withTestServer { server in
            let client = try TestClient(port: server.port)
            #expect(try client.hello(name: "👩‍🚀 Lorraine")["role"] as? String == "operate")
            let other = try TestClient(port: server.port)
            #expect(try other.hello(name: "می‌خواهم")["role"] as? String == "operate")
        }
    }

    @Test("text and json handlers escape C0, C1 and format characters; text quotes values that could forge a field")
    func handlers() throws {
        let lines = Lines()
        var text = TextLogHandler(label: "outatime") { lines.append($0) }
        text.logLevel = .trace
        var json = JSONLogHandler(label: "outatime") { lines.append($0) }
        json.logLevel = .trace
        let metadata: Logger.Metadata = ["name": "a\u{85}b\u{9B}c\u{202E}d", "plain": "x", "empty": "", "nl": "1\n2"]
        for handler in [text as any LogHandler, json] {
            Logger(label: "outatime") { _ in handler }.notice("msg \u{9B}31m\u{202E}\nend", metadata: metadata)
        }
        let all = lines.all
        #expect(all.count == 2)
        let textLine = all[0], jsonLine = all[1]
        #expect(textLine.hasSuffix(#"[OutaTimeServerTests] msg \u{9B}31m\u{202E}\nend"# + "\n"), "\(textLine)")
        #expect(textLine.contains(#" empty="" name="a\u{85}b\u{9B}c\u{202E}d" nl="1\n2" plain=x "#), "\(textLine)")
        #expect(jsonLine.contains(#""name":"a\u0085b\u009bc\u202ed""#), "\(jsonLine)")
        #expect(jsonLine.contains(#""msg":"msg \u009b31m\u202e\nend""#), "\(jsonLine)")
        for line in all {
            #expect(!line.unicodeScalars.contains { (0x80...0x9F).contains($0.value) || $0.value == 0x202E }, "\(line)")
            #expect(line.filter { $0 == "\n" }.count == 1 && line.hasSuffix("\n"))
        }
    }
}

/// Lines a handler wrote.
final class Lines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ line: String) { lock.withLock { lines.append(line) } }
    var all: [String] { lock.withLock { lines } }
}
