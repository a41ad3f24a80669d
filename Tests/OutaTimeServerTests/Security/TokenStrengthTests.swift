import Foundation
import OutaTimeTestKit
import OutaTimeTestSupport
@testable import OutaTimeServer
import Testing

/// Tokens given in the clear must carry at least 128 bits by their length
/// and characters (TokenStrength); digests are not judged.
@Suite("token strength", .timeLimit(.minutes(3)))
struct TokenStrengthTests {
    static let strong = "Qm7vX2kR9tL4wZ8pN3cF6hJ1"  // 24 characters of three classes: 142 bits

    @Test("a weak token in the clear stops the server at start with exit 64, naming the file and the entry, not the token")
    func refusedAtStart() throws {
        let file = try TokensFile([["token": Self.strong, "name": "Doc", "role": "admin"],
                                   ["token": "marty-1985", "name": "Marty", "role": "operate"]])
        let server = try ServerProcess(["--port", "0", "--tokens", file.path])
        #expect(server.waitForExit() == 64, "stderr: \(server.stderrText)")
        let stderr = server.stderrText
        #expect(stderr.contains("tokens file \(file.path): entry 2 of 2 ('Marty'): the token is too weak: about 61 bits"),
                "\(stderr)")
        #expect(stderr.contains("openssl rand -base64 32"), "\(stderr)")
        #expect(!stderr.contains("marty-1985") && !stderr.contains(Self.strong), "a token reached stderr: \(stderr)")
    }

    @Test("generated tokens pass: openssl rand -base64 32, -base64 24, -hex 16, -hex 32")
    func generatedTokensPass() throws {
        for arguments in [["-base64", "32"], ["-base64", "24"], ["-hex", "16"], ["-hex", "32"]] {
            for _ in 0..<20 {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                process.arguments = ["openssl", "rand"] + arguments
                let out = Pipe()
                process.standardOutput = out
                try process.run()
                let token = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                    .trimmingCharacters(in: .whitespacesAndNewlines)
                process.waitUntilExit()
                #expect(TokenStrength.problem(token) == nil, "\(arguments): \(token) (\(TokenStrength.estimatedBits(token)) bits)")
            }
        }
    }

    @Test("estimates", arguments: [
        ("secret", 28), ("marty-1985", 61), ("Tr0ub4dor&3", 72), ("correct horse battery staple", 164),
        (String(repeating: "ab12", count: 10), 160), ("0123456789abcdef0123456789abcdef", 128),
        ("0123456789ABCDEF0123456789ABCDEF", 128), (String(repeating: "7", count: 39), 129),
    ])
    func estimates(token: String, bits: Int) {
        #expect(TokenStrength.estimatedBits(token) == bits)
    }

    @Test("refused: short, single-class or few distinct characters; a sha256 entry is never judged")
    func refusals() throws {
        for weak in ["secret", "Tr0ub4dor&3", String(repeating: "ab12", count: 10), String(repeating: "7", count: 39),
                     "0123456789abcdef0123456789abcde"] {
            #expect(TokenStrength.problem(weak) != nil, "\(weak) accepted")
        }
        #expect(TokenStrength.problem("0123456789abcdef0123456789abcdef") == nil)
        let file = try TokensFile([["sha256": String(repeating: "0", count: 64), "name": "Board", "role": "watch"]])
        #expect(try TokenTable.load(from: file.path).entries.count == 1)
    }
}
