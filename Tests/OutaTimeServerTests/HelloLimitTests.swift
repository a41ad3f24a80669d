import Foundation
import OutaTimeProtocol
@testable import OutaTimeServer
import OutaTimeTestSupport
import Testing

/// `--max-failed-hellos`: beyond N failed `hello`s from one address (or
/// with one token) within the window, every `hello` counted against it is
/// answered late (doubling up to `--max-failed-hello-delay-ms`), valid or
/// not; a valid token is never refused (clients behind one NAT or balancer
/// share an address). Other addresses and tokens go on.
@Suite("failed hello limit", .timeLimit(.minutes(3)))
struct HelloLimitTests {
    static let good = "operator-secret-1955"

    /// A tokens file with one valid token.
    private static func tokensFile() throws -> TokensFile {
        try TokensFile([tokenEntry(good, "Otto", "operate")])
    }

    /// Sends `hello` with `token` on a new connection from `source`; returns
    /// the reply and how long it took, after checking the `bye`
    /// `unauthorized` and the close when it failed.
    private func hello(_ server: TestServer, token: String?, source: String? = nil,
                       sourceLocation: SourceLocation = #_sourceLocation) throws -> (reply: [String: Any], seconds: Double) {
        let client = try TestClient(port: server.port, source: source)
        var fields: [String: Any] = ["protocol": 1, "name": "Biff"]
        if let token { fields["token"] = token }
        let started = Date()
        let reply = try client.request("hello", fields)
        let seconds = Date().timeIntervalSince(started)
        if reply["ok"] as? Bool == false {
            let bye = try client.readUntil(type: "bye")
            #expect(bye["reason"] as? String == "unauthorized", sourceLocation: sourceLocation)
            #expect(client.expectClosed(), "still open after bye", sourceLocation: sourceLocation)
        }
        return (reply, seconds)
    }

    @Test("beyond N failures from an address a valid token is still accepted, answered late like a failure, at most the cap")
    func validTokenNeverLockedOut() throws {
        let tokens = try Self.tokensFile()
        try withTestServer({ tokens.configure(&$0); $0.maxFailedHellos = 3; $0.failedHelloDelayMs = 20
                             $0.maxFailedHelloDelayMs = 300 }) { server in
            let before = try server.connectReady(name: "early", token: Self.good)
            for token in ["guess-1", nil, "guess-3"] {
                #expect(try hello(server, token: token).reply.errorCode == .unauthorized)
            }
            // Throttled now (3 failures): the valid token gets in, 20 ms late.
            let first = try hello(server, token: Self.good)
            #expect(first.reply["ok"] as? Bool == true, "got \(describe([first.reply]))")
            #expect(first.seconds >= 0.015, "answered after \(first.seconds) s")
            // Many more failures: the delay doubles to the cap and stays there.
            for index in 0..<5 {
                let failed = try hello(server, token: "guess-more-\(index)")
                #expect(failed.reply.errorCode == .unauthorized)
                #expect(failed.reply.errorMessage?.contains("the token is not valid") == true)
            }
            let capped = try hello(server, token: Self.good)
            #expect(capped.reply["ok"] as? Bool == true, "got \(describe([capped.reply]))")
            #expect(capped.seconds >= 0.28, "answered after \(capped.seconds) s (cap 300 ms)")
            // Another address is not throttled; a connection past hello goes on.
            var stats = try before.call("stats")
            let throttled = stats[int: "hellos_throttled"]
            #expect(throttled == 7, "stats: \(stats)")
            #expect(try hello(server, token: Self.good, source: "127.0.0.2").reply["ok"] as? Bool == true)
            #expect(try hello(server, token: "guess", source: "127.0.0.3").reply.errorCode == .unauthorized)
            stats = try before.call("stats")
            #expect(stats[int: "hellos_throttled"] == throttled, "stats: \(stats)")
            #expect(stats[int: "hellos_failed"] == 9, "stats: \(stats)")
            #expect(stats[int: "max_failed_hellos"] == 3)
            #expect(try before.request("ping").isOK)
        }
    }

    @Test("failures are counted per presented token too: one wrong token from many addresses is throttled")
    func perToken() throws {
        let tokens = try Self.tokensFile()
        try withTestServer({ tokens.configure(&$0); $0.maxFailedHellos = 2; $0.failedHelloDelayMs = 5
                             $0.maxFailedHelloDelayMs = 50 }) { server in
            let watcher = try server.connectReady(token: Self.good)
            for source in ["127.0.0.2", "127.0.0.3"] {
                #expect(try hello(server, token: "stale-token", source: source).reply.errorCode == .unauthorized)
            }
            #expect(try watcher.call("stats")[int: "hellos_throttled"] == 0)
            // A third address, same wrong token: throttled by the token's count.
            #expect(try hello(server, token: "stale-token", source: "127.0.0.4").reply.errorCode == .unauthorized)
            #expect(try watcher.call("stats")[int: "hellos_throttled"] == 1)
            // The valid token from that address is not.
            #expect(try hello(server, token: Self.good, source: "127.0.0.4").reply["ok"] as? Bool == true)
            #expect(try watcher.call("stats")[int: "hellos_throttled"] == 1)
        }
    }

    @Test("the throttle ends with its window (failedHelloWindowMs)")
    func throttleEnds() throws {
        let tokens = try Self.tokensFile()
        try withTestServer({ tokens.configure(&$0); $0.maxFailedHellos = 1; $0.failedHelloWindowMs = 600_000
                             $0.failedHelloDelayMs = 5; $0.maxFailedHelloDelayMs = 5; $0.heartbeatMs = 600_000 }) { server in
            #expect(try hello(server, token: "guess").reply.errorCode == .unauthorized)
            #expect(try hello(server, token: Self.good).reply["ok"] as? Bool == true)
            let watcher = try TestClient(port: server.port, source: "127.0.0.9")
            try watcher.hello(token: Self.good)
            #expect(try watcher.call("stats")[int: "hellos_throttled"] == 1)
            // Past the ten-minute window on the server's clock, not slept.
            #expect(server.handle.advanceClock(milliseconds: 600_000))
            #expect(try hello(server, token: Self.good).reply["ok"] as? Bool == true)
            #expect(try watcher.call("stats")[int: "hellos_throttled"] == 1)
        }
    }

    @Test("a failed hello is answered late (failedHelloDelayMs) without holding up other connections")
    func failureSlowed() throws {
        let tokens = try Self.tokensFile()
        // The longest delay (5 s), passed on the server's clock: the answer
        // comes when the clock reaches it, not before.
        try withTestServer({ tokens.configure(&$0); $0.failedHelloDelayMs = 5_000; $0.maxFailedHelloDelayMs = 5_000
                             $0.heartbeatMs = 600_000 }) { server in
            let other = try server.connectReady(token: Self.good)
            let guesser = try server.connect()
            try guesser.sendFrame(["type": "hello", "id": 1, "protocol": 1, "token": "guess"])
            // The loop goes on meanwhile.
            let pong = try other.request("ping", timeout: 2)
            #expect(pong.isOK)
            // The clock moves only once the server has the failed hello (the
            // two connections' reads are not ordered): its delay runs from then.
            var failed = 0
            for _ in 0..<500 where failed == 0 {
                failed = try other.call("stats")[int: "hellos_failed"] ?? 0
                if failed == 0 { usleep(10_000) }
            }
            #expect(failed == 1)
            #expect(server.handle.advanceClock(milliseconds: 4_000))
            #expect(throws: (any Error).self, "answered before the delay") { try guesser.readFrame(timeout: 0.1) }
            #expect(server.handle.advanceClock(milliseconds: 1_000))
            let reply = try guesser.readReply(id: 1, timeout: 2)  // the delay is 5 s: only the clock brings it
            #expect(reply.errorCode == .unauthorized, "got \(describe([reply]))")
            #expect(try guesser.readFrame()["reason"] as? String == "unauthorized")
            #expect(server.handle.advanceClock(milliseconds: server.config.lingerMs + 1))  // the linger after bye
            #expect(guesser.expectClosed())
        }
    }

    @Test("0 turns the throttle off")
    func off() throws {
        let tokens = try Self.tokensFile()
        try withTestServer({ tokens.configure(&$0); $0.maxFailedHellos = 0; $0.failedHelloDelayMs = 0 }) { server in
            for _ in 0..<5 {
                let failed = try hello(server, token: "guess")
                #expect(failed.reply.errorCode == .unauthorized)
            }
            let accepted = try hello(server, token: Self.good)
            #expect(accepted.reply["ok"] as? Bool == true)
            let stats = try server.connectReady(token: Self.good).call("stats")
            #expect(stats[int: "hellos_throttled"] == 0, "stats: \(stats)")
        }
    }

    @Test("the limit is validated and named in the error")
    func validation() {
        var config = ServerConfig()
        config.maxFailedHellos = -1
        do { try config.validate(); Issue.record("accepted -1") } catch {
            #expect(error.message.contains("--max-failed-hellos -1"))
        }
        config = ServerConfig()
        config.maxFailedHelloDelayMs = 100
        do { try config.validate(); Issue.record("accepted a cap below the first delay") } catch {
            #expect(error.message.contains("--max-failed-hello-delay-ms 100 is out of range (250…60000 ms"), "\(error.message)")
        }
    }
}
