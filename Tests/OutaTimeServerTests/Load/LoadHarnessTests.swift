import OutaTimeTestSupport
import Foundation
import Testing

/// `outatime-load`, run as a user would run it, for a short bounded run
/// against a real in-process server. Correctness only: no timing thresholds.
@Suite("outatime-load harness")
struct LoadHarnessTests {
    /// Runs `outatime-load ARGS --port PORT` and waits (bounded) for it to exit.
    static func load(_ arguments: [String], port: Int) throws -> ToolRun {
        try ToolRun.run("outatime-load", arguments + ["--port", "\(port)"])
    }

    /// The run's `--json` report; when stdout is not one JSON object the
    /// test fails showing both streams.
    static func json(_ run: ToolRun) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any],
                     "stdout: \(run.stdout)\nstderr: \(run.stderr)")
    }

    @Test("fanout: 10 subscribers × 200 messages, each delivered exactly once")
    func fanout() throws {
        try withTestServer { server in
            let run = try Self.load(["fanout", "--subscribers", "10", "--messages", "200", "--size", "64",
                                     "--duration", "10", "--stall-timeout", "10", "--json"], port: server.port)
            #expect(run.status == 0, "stderr: \(run.stderr)\nstdout: \(run.stdout)")
            let result = try Self.json(run)
            #expect(result["published"] as? Int == 200)
            #expect(result["delivered"] as? Int == 10 * 200)
            #expect(result["lost"] as? Int == 0)
            #expect(result["duplicated"] as? Int == 0)
            #expect(result["errors"] as? Int == 0)
            #expect(result["ok"] as? Bool == true)
            let latency = try #require(result["latency"] as? [String: Any])
            #expect((latency["max_us"] as? Int ?? 0) >= (latency["p50_us"] as? Int ?? 1))
        }
    }

    @Test("fanout: the readable table names every figure; a paced run also completes")
    func fanoutTableAndRate() throws {
        try withTestServer { server in
            let run = try Self.load(["fanout", "--subscribers", "3", "--messages", "50", "--rate", "500",
                                     "--duration", "10"], port: server.port)
            #expect(run.status == 0, "stderr: \(run.stderr)")
            for label in ["deliveries/s", "latency p99", "latency p99.9", "lost", "duplicated"] {
                #expect(run.stdout.contains(label))
            }
            #expect(run.stdout.contains("150 of 150 expected"))
        }
    }

    @Test("fanout: an unreachable server is an error, not a pass")
    func unreachable() throws {
        try withTestServer { server in
            let port = server.port
            server.stop()
            let run = try Self.load(["fanout", "--subscribers", "2", "--messages", "10", "--duration", "5", "--json"],
                                    port: port)
            #expect(run.status != 0)
        }
    }
}
