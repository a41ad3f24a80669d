import OutaTimeTestSupport
import Foundation
import OutaTimeServer
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
            let result = try LoadHarnessTests.json(run)
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

    @Test("--token: against a server with a tokens file the commands run; without the token every hello is refused")
    func token() throws {
        let tokens = [AccessToken(token: "load-secret-88", name: "Loader", role: .operate)]
        try withTestServer({ $0.tokens = tokens }) { server in
            let run = try LoadHarnessTests.load(["commands", "--clients", "2", "--commands", "40", "--duration", "20",
                                                 "--json", "--token", "load-secret-88"], port: server.port)
            #expect(run.status == 0, "stderr: \(run.stderr)\nstdout: \(run.stdout)")
            let result = try LoadHarnessTests.json(run)
            #expect(result["acknowledged"] as? Int == 40 && result["errors"] as? Int == 0, "\(result)")
            let refused = try LoadHarnessTests.load(["commands", "--clients", "2", "--commands", "40", "--duration", "20"],
                                                    port: server.port)
            #expect(refused.status != 0)
            #expect(refused.stderr.contains("unauthorized") || refused.stdout.contains("unauthorized"),
                    "stderr: \(refused.stderr)\nstdout: \(refused.stdout)")
        }
    }

    @Test("commands --pipeline 8: 2 clients with 8 commands in flight each, 300 commands, each acknowledged once")
    func pipelined() throws {
        try withTestServer { server in
            let run = try LoadHarnessTests.load(["commands", "--clients", "2", "--pipeline", "8", "--commands", "300",
                                                 "--duration", "20", "--json"], port: server.port)
            #expect(run.status == 0, "stderr: \(run.stderr)\nstdout: \(run.stdout)")
            let result = try LoadHarnessTests.json(run)
            #expect(result["pipeline"] as? Int == 8)
            #expect(result["sent"] as? Int == 300)
            #expect(result["acknowledged"] as? Int == 300)
            #expect(result["errors"] as? Int == 0)
            #expect(result["ok"] as? Bool == true)
            // Pipelined, the stopwatch cycle stays valid: one durable event per command, none refused.
            #expect(result["events_committed"] as? Int == 300)
            let latency = try #require(result["latency"] as? [String: Any])
            #expect((latency["max_us"] as? Int ?? 0) >= (latency["p50_us"] as? Int ?? 1))
            let cpu = try #require(result["harness_cpu"] as? [String: Any])
            #expect((cpu["cpu_s"] as? Double ?? -1) >= 0)
            #expect((cpu["wall_s"] as? Double ?? 0) > 0)
        }
    }

    @Test("commands --refill burst: 8 at a time, the next 8 once all are answered, 300 commands, each acknowledged once")
    func burst() throws {
        try withTestServer { server in
            let run = try LoadHarnessTests.load(["commands", "--clients", "1", "--pipeline", "8", "--refill", "burst",
                                                 "--commands", "300", "--duration", "20", "--json"], port: server.port)
            #expect(run.status == 0, "stderr: \(run.stderr)\nstdout: \(run.stdout)")
            let result = try LoadHarnessTests.json(run)
            #expect(result["refill"] as? String == "burst")
            #expect(result["sent"] as? Int == 300)
            #expect(result["acknowledged"] as? Int == 300)
            #expect(result["events_committed"] as? Int == 300)
            // A burst is sent only once the previous one is answered, so no
            // commit can hold commands of two bursts: at least 38 commits.
            #expect((result["store_batches"] as? Int ?? 0) >= 38)
            #expect(result["ok"] as? Bool == true)
        }
    }

    @Test("commands: --refill names its modes when given another", arguments: ["sideways"])
    func refillRefused(value: String) throws {
        let run = try LoadHarnessTests.load(["commands", "--refill", value], port: 1)
        #expect(run.status == 64, "stderr: \(run.stderr)")
        #expect(run.stderr.contains("window") && run.stderr.contains("burst"), "stderr: \(run.stderr)")
    }

    @Test("commands: --pipeline out of range is refused with exit status 64", arguments: ["0", "10001"])
    func pipelineRange(value: String) throws {
        // Refused before any connection: port 1 is never dialled.
        let run = try LoadHarnessTests.load(["commands", "--pipeline", value], port: 1)
        #expect(run.status == 64, "stderr: \(run.stderr)")
        #expect(run.stderr.contains("--pipeline must be 1…10000, got \(value)"), "stderr: \(run.stderr)")
    }

    @Test("commands: a duration-bounded run prints the table and leaves no stopwatch running")
    func commandsTable() throws {
        try withTestServer { server in
            let run = try LoadHarnessTests.load(["commands", "--clients", "4", "--pipeline", "3", "--duration", "2"],
                                                port: server.port)
            #expect(run.status == 0, "stderr: \(run.stderr)\nstdout: \(run.stdout)")
            for label in ["commands/s", "latency p99", "latency p99.9", "latency max", "errors", "events per batch",
                          "largest batch", "in flight per client", "harness CPU", "commands in flight each"] {
                #expect(run.stdout.contains(label), "\(label)")
            }
            // Stopped in mid-cycle, a stopwatch would tick on the server for ever.
            let client = try server.connectReady(name: "checker")
            let channels = try #require(try client.call("list", ["kind": "laps"])[objects: "channels"])
            #expect(channels.count == 4)
            for channel in channels {
                let name = try #require(channel["channel"] as? String)
                var status = ""
                for _ in 0..<100 {  // the harness's last stop may still be committing
                    status = try client.call("get", ["channel": name])[object: "state"]?["status"] as? String ?? ""
                    if status != "running" { break }
                    usleep(20_000)
                }
                #expect(status != "running", "\(name) is still running")
            }
        }
    }
}
