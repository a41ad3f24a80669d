import Foundation
import OutaTimeProtocol
import OutaTimeServer
import OutaTimeTestSupport
import Testing

/// `--max-failed-hellos`: beyond N failed `hello`s from one address within
/// the window, every `hello` from it is refused (`unauthorized`, `bye`
/// `unauthorized`) until the window ends, even with a valid token; other
/// addresses go on.
@Suite("failed hello limit", .timeLimit(.minutes(3)))
struct HelloLimitTests {
    static let good = "operator-secret-1955"

    /// A tokens file with one valid token.
    private static func tokensFile() throws -> TokensFile {
        try TokensFile([tokenEntry(good, "Otto", "operate")])
    }

    /// Sends `hello` with `token` on a new connection from `source`; returns
    /// the reply, after checking the `bye` `unauthorized` and the close when
    /// it failed.
    private func hello(_ server: TestServer, token: String?, source: String? = nil,
                       sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any] {
        let client = try TestClient(port: server.port, source: source)
        var fields: [String: Any] = ["protocol": 1, "name": "Biff"]
        if let token { fields["token"] = token }
        let reply = try client.request("hello", fields)
        if reply["ok"] as? Bool == false {
            let bye = try client.readUntil(type: "bye")
            #expect(bye["reason"] as? String == "unauthorized", sourceLocation: sourceLocation)
            #expect(client.expectClosed(), "still open after bye", sourceLocation: sourceLocation)
        }
        return reply
    }

    @Test("after N failed hellos the address is locked out, even with the right token; other addresses and stats")
    func lockout() throws {
        let tokens = try Self.tokensFile()
        try withTestServer({ tokens.configure(&$0); $0.maxFailedHellos = 3 }) { server in
            // A valid hello before the failures: successes do not reset or count.
            let before = try server.connectReady(name: "early", token: Self.good)

            for token in ["guess-1", nil, "guess-3"] {
                let reply = try hello(server, token: token)
                #expect(reply.errorCode == .unauthorized)
                #expect(reply.errorMessage?.contains("locked out") == false, "\(reply.errorMessage ?? "")")
            }
            let refused = try hello(server, token: Self.good)
            #expect(refused.errorCode == .unauthorized, "got \(describe([refused]))")
            let message = refused.errorMessage ?? ""
            #expect(message.contains("address 127.0.0.1 is locked out for"), "message: \(message)")
            #expect(message.contains("--max-failed-hellos"), "message: \(message)")
            // The remaining time is named in whole seconds, at most the window.
            let seconds = message.split(separator: " ").drop { $0 != "for" }.dropFirst().first.flatMap { Int($0) }
            #expect(seconds.map { (1...60).contains($0) } == true, "message: \(message)")
            // A wrong token is refused the same way, without being counted as a failure.
            #expect(try hello(server, token: "guess-4").errorMessage?.contains("locked out") == true)

            // Another client address is unaffected.
            let other = try hello(server, token: Self.good, source: "127.0.0.2")
            #expect(other["ok"] as? Bool == true, "got \(describe([other]))")
            // A connection already past hello goes on.
            #expect(try before.request("ping").isOK)

            let stats = try before.call("stats")
            #expect(stats[int: "hellos_failed"] == 3, "stats: \(stats)")
            #expect(stats[int: "hellos_locked_out"] == 2, "stats: \(stats)")
            #expect(stats[int: "max_failed_hellos"] == 3)
        }
    }

    @Test("the lockout ends with its window (failedHelloWindowMs)")
    func lockoutEnds() throws {
        let tokens = try Self.tokensFile()
        try withTestServer({ tokens.configure(&$0); $0.maxFailedHellos = 1; $0.failedHelloWindowMs = 300 }) { server in
            #expect(try hello(server, token: "guess").errorCode == .unauthorized)
            // Retry (bounded) until the window has ended; every refusal
            // meanwhile is a lockout.
            var lockouts = 0
            var accepted = false
            for _ in 0..<100 where !accepted {
                let reply = try hello(server, token: Self.good)
                if reply["ok"] as? Bool == true {
                    accepted = true
                } else {
                    #expect(reply.errorMessage?.contains("locked out") == true, "got \(describe([reply]))")
                    lockouts += 1
                    usleep(20_000)
                }
            }
            #expect(accepted, "still locked out after \(lockouts) tries")
            let stats = try server.connectReady(token: Self.good).call("stats")
            #expect(stats[int: "hellos_locked_out"] == lockouts)
            #expect(stats[int: "hellos_failed"] == 1)
        }
    }

    @Test("a failed hello is answered late (failedHelloDelayMs) without holding up other connections")
    func failureSlowed() throws {
        let tokens = try Self.tokensFile()
        try withTestServer({ tokens.configure(&$0); $0.failedHelloDelayMs = 400 }) { server in
            let other = try server.connectReady(token: Self.good)
            let guesser = try server.connect()
            let started = Date()
            try guesser.sendFrame(["type": "hello", "id": 1, "protocol": 1, "token": "guess"])
            // The loop goes on meanwhile.
            let pong = try other.request("ping", timeout: 2)
            #expect(pong.isOK)
            let reply = try guesser.readReply(id: 1, timeout: 5)
            let elapsed = Date().timeIntervalSince(started)
            #expect(reply.errorCode == .unauthorized, "got \(describe([reply]))")
            #expect(elapsed >= 0.35, "answered after \(elapsed) s")
            #expect(try guesser.readFrame()["reason"] as? String == "unauthorized")
            #expect(guesser.expectClosed())
        }
    }

    @Test("0 turns the limit off")
    func off() throws {
        let tokens = try Self.tokensFile()
        try withTestServer({ tokens.configure(&$0); $0.maxFailedHellos = 0 }) { server in
            for _ in 0..<5 {
                let reply = try hello(server, token: "guess")
                #expect(reply.errorCode == .unauthorized)
            }
            #expect(try hello(server, token: Self.good)["ok"] as? Bool == true)
        }
    }

    @Test("the limit is validated and named in the error")
    func validation() {
        var config = ServerConfig()
        config.maxFailedHellos = -1
        do { try config.validate(); Issue.record("accepted -1") } catch {
            #expect(error.message.contains("--max-failed-hellos -1"))
        }
    }
}
