import OutaTimeTestSupport
import Foundation
import Testing

/// `outatime-load commands --workload … --preload …`: short bounded runs
/// against a real in-process server. Correctness only: no timing thresholds.
@Suite("outatime-load harness: commands workloads")
struct LoadCommandsWorkloadTests {
    @Test("commands --workload W --preload 50: 2 clients × 8 in flight, 120 commands, each acknowledged, one event each",
          arguments: ["timer-add", "timer-update", "dispatch"])
    func workload(name: String) throws {
        try withTestServer { server in
            let run = try LoadHarnessTests.load(["commands", "--workload", name, "--preload", "50", "--clients", "2",
                                                 "--pipeline", "8", "--commands", "120", "--duration", "20", "--json"],
                                                port: server.port)
            #expect(run.status == 0, "stderr: \(run.stderr)\nstdout: \(run.stdout)")
            let result = try LoadHarnessTests.json(run)
            #expect(result["workload"] as? String == name)
            #expect(result["preload"] as? Int == 50)
            // Both clients filled their own channel, outside the measured figures.
            #expect(result["preloaded"] as? Int == 100)
            #expect((result["preload_s"] as? Double ?? -1) >= 0)
            let kind = name == "dispatch" ? "starport" : "timers"
            #expect((result["channel_prefix"] as? String)?.hasPrefix("\(kind)/load-") == true)
            #expect(result["sent"] as? Int == 120)
            #expect(result["acknowledged"] as? Int == 120)
            #expect(result["errors"] as? Int == 0)
            #expect(result["ok"] as? Bool == true)
            // Each add, update or far-future dispatch is exactly one durable
            // event; the preload's 100 events were committed before the count began.
            #expect(result["events_committed"] as? Int == 120)
            #expect(run.stderr.contains("preload: 50 "), "stderr: \(run.stderr)")
        }
    }

    @Test("commands: the table names the workload and the preload")
    func table() throws {
        try withTestServer { server in
            let run = try LoadHarnessTests.load(["commands", "--workload", "dispatch", "--preload", "50", "--clients", "1",
                                                 "--pipeline", "4", "--commands", "20", "--duration", "20"],
                                                port: server.port)
            #expect(run.status == 0, "stderr: \(run.stderr)\nstdout: \(run.stdout)")
            #expect(run.stdout.contains("commands dispatch starport/load-"), "stdout: \(run.stdout)")
            #expect(run.stdout.contains("(preload 50)"), "stdout: \(run.stdout)")
            #expect(run.stdout.contains("50 per client, 50 in"), "stdout: \(run.stdout)")
            #expect(run.stdout.contains("20 of 20 sent"), "stdout: \(run.stdout)")
        }
    }

    @Test("commands: the default workload is laps, without a preload")
    func defaultIsLaps() throws {
        try withTestServer { server in
            let run = try LoadHarnessTests.load(["commands", "--clients", "1", "--commands", "10", "--duration", "20",
                                                 "--json"], port: server.port)
            #expect(run.status == 0, "stderr: \(run.stderr)\nstdout: \(run.stdout)")
            let result = try LoadHarnessTests.json(run)
            #expect(result["workload"] as? String == "laps")
            #expect(result["preload"] as? Int == 0)
            #expect((result["channel_prefix"] as? String)?.hasPrefix("laps/load-") == true)
            #expect(result["events_committed"] as? Int == 10)
        }
    }

    @Test("commands: an unknown --workload is refused with exit status 64, listing the allowed ones",
          arguments: ["bogus", "timers", ""])
    func badWorkload(value: String) throws {
        // Refused before any connection: port 1 is never dialled.
        let run = try LoadHarnessTests.load(["commands", "--workload", value], port: 1)
        #expect(run.status == 64, "stderr: \(run.stderr)")
        for allowed in ["'laps'", "'timer-add'", "'timer-update'", "'dispatch'"] {
            #expect(run.stderr.contains(allowed), "stderr: \(run.stderr)")
        }
    }

    @Test("commands: a preload that cannot work is refused with exit status 64",
          arguments: [(["--workload", "timer-update"], "--workload timer-update needs --preload of at least 1"),
                      (["--preload", "5"], "--preload does not apply to --workload laps"),
                      (["--workload", "timer-add", "--preload=-1"], "--preload must be 0…1000000, got -1")])
    func badPreload(arguments: [String], message: String) throws {
        let run = try LoadHarnessTests.load(["commands"] + arguments, port: 1)
        #expect(run.status == 64, "stderr: \(run.stderr)")
        #expect(run.stderr.contains(message), "stderr: \(run.stderr)")
    }
}
