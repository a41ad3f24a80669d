import Foundation
import OutaTimeTestSupport
import Testing

/// State-changing one-shots over a link cut mid-request (issue 27): sent
/// with an idempotency key and again on a new connection, so that the
/// command is applied exactly once; exit 4 when the outcome stays unknown.
@Suite("outatime one-shot retries", .timeLimit(.minutes(2)))
struct OneShotRetryTests {
    private static func timersAdd(port: Int, timeout: Int, _ extra: [String] = []) throws -> ToolRun {
        try ToolRun.run("outatime", ["timers", "add", "retry", "--event", "Clock tower", "--in", "10m", "--json",
                                     "--port", "\(port)", "--name", "cli-test", "--timeout", "\(timeout)"] + extra,
                        timeout: 30)
    }

    private static func timerCount(_ server: TestServer) throws -> Int? {
        let result = try server.connectReady().call("get", ["channel": "timers/retry"])
        return result[object: "state"]?[objects: "timers"]?.count
    }

    @Test("timers add whose reply is lost is sent again on a new connection: exit 0, one timer")
    func reconnectsAndRepeats() throws {
        try withTestServer { server in
            let relay = try CuttingRelay(to: server.port)
            defer { relay.stop() }
            let run = try Self.timersAdd(port: relay.port, timeout: 10)
            #expect(relay.didCut, "the first command's link was cut")
            #expect(run.status == 0, "stderr: \(run.stderr)")
            #expect(run.stdout.contains("Clock tower"), "\(run.stdout)")
            #expect(try Self.timerCount(server) == 1, "applied exactly once")
        }
    }

    @Test("with the path down until --timeout the exit status is 4, naming the key; that key applies it at most once")
    func outcomeUnknown() throws {
        try withTestServer { server in
            let relay = try CuttingRelay(to: server.port, refuseAfterCut: true)
            defer { relay.stop() }
            let run = try Self.timersAdd(port: relay.port, timeout: 3)
            #expect(run.status == 4, "stdout: \(run.stdout) stderr: \(run.stderr)")
            #expect(run.stderr.contains("outcome unknown"), "\(run.stderr)")
            let key = try #require(run.stderr.range(of: "--idempotency-key ").map { match in
                String(run.stderr[match.upperBound...].prefix { !$0.isWhitespace })
            }, "\(run.stderr)")
            #expect(try Self.timerCount(server) == 1, "the cut command was applied")

            // Run again with the printed key, straight to the server: answered, not applied again.
            let again = try Self.timersAdd(port: server.port, timeout: 5, ["--idempotency-key", key])
            #expect(again.status == 0, "stderr: \(again.stderr)")
            #expect(try Self.timerCount(server) == 1, "not applied twice")
        }
    }

    @Test("an unreachable server still exits 3: nothing was sent; a bad --idempotency-key exits 64")
    func unreachableAndBadKey() throws {
        try withTestServer { server in
            let port = server.port
            server.stop()
            let run = try Self.timersAdd(port: port, timeout: 2)
            #expect(run.status == 3, "stderr: \(run.stderr)")
            let bad = try Self.timersAdd(port: port, timeout: 2, ["--idempotency-key", "has space"])
            #expect(bad.status == 64, "stderr: \(bad.stderr)")
            #expect(bad.stderr.contains("A–Z a–z 0–9 . _ - :"), "\(bad.stderr)")
        }
    }
}
