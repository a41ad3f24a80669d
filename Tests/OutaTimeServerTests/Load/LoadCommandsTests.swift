import OutaTimeTestSupport
import Foundation
import Testing

/// `outatime-load commands`, a short bounded run against a real in-process
/// server. Correctness only: no timing thresholds.
@Suite("outatime-load harness: commands")
struct LoadHarnessCommandsTests {
    @Test("commands: 4 clients × 200 commands, every one acknowledged, batches reported")
    func commands() throws {
        try withTestServer { server in
            let run = try LoadHarnessTests.load(["commands", "--clients", "4", "--commands", "200",
                                                 "--duration", "20", "--json"], port: server.port)
            #expect(run.status == 0, "stderr: \(run.stderr)\nstdout: \(run.stdout)")
            let result = try #require(JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
            #expect(result["sent"] as? Int == 200)
            #expect(result["acknowledged"] as? Int == 200)
            #expect(result["errors"] as? Int == 0)
            #expect(result["ok"] as? Bool == true)
            // Every lap-stopwatch action is exactly one durable event.
            #expect(result["events_committed"] as? Int == 200)
            #expect((result["store_batches"] as? Int ?? 0) >= 1)
            #expect((result["store_largest_batch"] as? Int ?? 0) >= 1)
            let latency = try #require(result["latency"] as? [String: Any])
            #expect((latency["max_us"] as? Int ?? 0) >= (latency["p50_us"] as? Int ?? 1))
        }
    }

    @Test("commands: a duration-bounded run prints the table")
    func commandsTable() throws {
        try withTestServer { server in
            let run = try LoadHarnessTests.load(["commands", "--clients", "4", "--duration", "2"], port: server.port)
            #expect(run.status == 0, "stderr: \(run.stderr)\nstdout: \(run.stdout)")
            for label in ["commands/s", "latency p99", "latency p99.9", "latency max", "errors", "events per batch",
                          "largest batch"] {
                #expect(run.stdout.contains(label))
            }
        }
    }
}
