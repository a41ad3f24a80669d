import OutaTimeTestKit
import OutaTimeTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `outatime-load timers` and `outatime-load connections`, short bounded runs
/// against a real in-process server (its normal 1 s timer ticks).
/// Correctness only: no timing thresholds.
@Suite("outatime-load harness: timers and connections")
struct LoadTimersConnectionsTests {
    @Test("timers: 200 timers over 4 lists, 2 watchers each, 3 s: every tick once, none missed")
    func timers() throws {
        try withTestServer { server in
            let run = try LoadHarnessTests.load(["timers", "--timers", "200", "--lists", "4", "--watchers", "2",
                                                 "--duration", "3", "--setup-timeout", "30", "--json"],
                                                port: server.port)
            #expect(run.status == 0, "stderr: \(run.stderr)\nstdout: \(run.stdout)")
            let result = try LoadHarnessTests.json(run)
            #expect(result["timers_started"] as? Int == 200)
            #expect((result["ticks_delivered"] as? Int ?? 0) > 0)
            #expect((result["updates_delivered"] as? Int ?? 0) > 0)
            // Every tick carries all 50 running timers of its list.
            #expect(result["updates_delivered"] as? Int == (result["ticks_delivered"] as? Int ?? 0) * 50)
            #expect((result["ticks_per_s"] as? Int ?? 0) > 0)
            #expect(result["expected_ticks_per_s"] as? Int == 8)
            #expect(result["missed_ticks"] as? Int == 0)
            #expect(result["duplicated_ticks"] as? Int == 0)
            #expect(result["missed_updates"] as? Int == 0)
            #expect(result["duplicated_updates"] as? Int == 0)
            // The same checks for the ticks seen during the setup, reported apart.
            for key in ["setup_missed_ticks", "setup_duplicated_ticks", "setup_missed_updates", "setup_duplicated_updates"] {
                #expect(result[key] as? Int == 0, "\(key)")
            }
            #expect(result["errors"] as? Int == 0)
            #expect(result["ok"] as? Bool == true)
            let lateness = try #require(result["lateness"] as? [String: Any])
            #expect((lateness["p50_us"] as? Int ?? 0) > 0)
            #expect((lateness["max_us"] as? Int ?? 0) >= (lateness["p99_us"] as? Int ?? 1))
            #expect(result["timers_added"] as? Int == 200)
            // One viewer and two watchers per list, whatever the number of timers.
            #expect(result["connections"] as? Int == 12)
            #expect(result["setup_window"] as? Int == 64)
            let setup = try #require(result["setup"] as? [String: Any])
            for phase in ["connect_and_add_s", "subscribe_s", "start_s", "total_s"] {
                #expect((setup[phase] as? Double ?? -1) >= 0, "setup.\(phase)")
            }
            #expect((setup["adds_per_s"] as? Int ?? 0) > 0)
            #expect((setup["starts_per_s"] as? Int ?? 0) > 0)
            #expect(setup["failed_in"] == nil)
            let cpu = try #require(result["harness_cpu"] as? [String: Any])
            for phase in ["setup", "measured"] {
                let part = try #require(cpu[phase] as? [String: Any], "harness_cpu.\(phase)")
                #expect((part["cpu_s"] as? Double ?? -1) >= 0)
                #expect((part["wall_s"] as? Double ?? 0) > 0)
            }
        }
    }

    @Test("timers: with a 0.5 s server heartbeat every connection pings through setup and a 3 s measurement; none is closed")
    func timersHeartbeats() throws {
        // Silence for 1 s closes a connection (idle_timeout): the watchers send
        // nothing but pings for the whole measurement. A window of 4 keeps the
        // viewers' requests below what makes today's server stop reading them.
        try withTestServer({ $0.heartbeatMs = 500 }) { server in
            let run = try LoadHarnessTests.load(["timers", "--timers", "40", "--lists", "2", "--watchers", "2",
                                                 "--setup-window", "4", "--duration", "3", "--setup-timeout", "30",
                                                 "--json"], port: server.port)
            #expect(run.status == 0, "stderr: \(run.stderr)\nstdout: \(run.stdout)")
            let result = try LoadHarnessTests.json(run)
            #expect(result["errors"] as? Int == 0, "first error: \(result["first_error"] ?? "none")")
            #expect(result["timers_started"] as? Int == 40)
            #expect(result["setup_window"] as? Int == 4)
            #expect(result["missed_ticks"] as? Int == 0)
            #expect(result["ok"] as? Bool == true)
        }
    }

    @Test("timers: the readable table names every figure")
    func timersTable() throws {
        try withTestServer { server in
            let run = try LoadHarnessTests.load(["timers", "--timers", "6", "--lists", "2", "--watchers", "1",
                                                 "--duration", "2", "--setup-timeout", "30"], port: server.port)
            #expect(run.status == 0, "stderr: \(run.stderr)\nstdout: \(run.stdout)")
            for label in ["ticks/s", "updates/s", "lateness p50", "lateness p99.9", "lateness max", "missed ticks",
                          "duplicated ticks", "errors", "6 of 6", "connections", "4 (2 viewers + 2 watchers)",
                          "setup rates", "adds/s", "starts/s", "harness CPU, setup", "harness CPU, measured",
                          "during setup: missed, duplicated ticks"] {
                #expect(run.stdout.contains(label), "missing \(label) in \(run.stdout)")
            }
        }
    }

    @Test("connections: 200 idle connections over 4 channels, all subscribed, RSS per connection reported")
    func connections() throws {
        try withTestServer { server in
            let run = try LoadHarnessTests.load(["connections", "--connections", "200", "--channels", "4",
                                                 "--settle", "0.5", "--duration", "30", "--json"], port: server.port)
            #expect(run.status == 0, "stderr: \(run.stderr)\nstdout: \(run.stdout)")
            let result = try LoadHarnessTests.json(run)
            #expect(result["opened"] as? Int == 200)
            #expect(result["failed"] as? Int == 0)
            #expect(result["errors"] as? Int == 0)
            #expect(result["ok"] as? Bool == true)
            #expect(result["rss_per_connection_bytes"] is Int)
            #expect((result["rss_after_bytes"] as? Int ?? 0) > 0)
            #expect(result["server_subscriptions_added"] as? Int == 200)
            // The probe connection was the only one before; it has closed by the second reading.
            let before = result["server_connections_before"] as? Int ?? -1
            let after = result["server_connections_after"] as? Int ?? -1
            #expect(after - before >= 200)
            // 50 subscribers per channel: each subscribe tells the earlier ones (50 × 49 / 2 per channel).
            #expect(result["presence_deliveries"] as? Int == 4 * 50 * 49 / 2)
            #expect((result["open_s"] as? Double ?? -1) >= 0)
        }
    }

    @Test("bad sizes are refused with exit status 64 and a message naming the value",
          arguments: [
              (["timers", "--timers", "0"], "--timers must be 1…10000000, got 0"),
              (["timers", "--timers", "10", "--lists", "20"], "--lists must be 1…10"),
              (["timers", "--watchers", "0"], "--watchers must be 1…1000 per list, got 0"),
              (["timers", "--setup-window", "0"], "--setup-window must be 1…1000, got 0"),
              (["connections", "--connections", "0"], "--connections must be 1…1000000, got 0"),
              (["connections", "--connections", "10", "--channels", "11"], "--channels must be 1…10"),
              (["connections", "--concurrency", "0"], "--concurrency must be 1…10000, got 0"),
          ])
    func validation(arguments: [String], message: String) throws {
        // Refused before any connection: port 1 is never dialled.
        let run = try LoadHarnessTests.load(arguments, port: 1)
        #expect(run.status == 64, "stderr: \(run.stderr)")
        #expect(run.stderr.contains(message), "stderr: \(run.stderr)")
    }

    @Test("connections: more connections than the open-file limit allows is refused up front")
    func fileLimit() throws {
        // Only where a million files cannot be opened (else the run would really try).
        guard let hard = OpenFileLimit.hard, hard < 1_000_064 else { return }
        try withTestServer { server in
            let run = try LoadHarnessTests.load(["connections", "--connections", "1000000", "--channels", "1"],
                                                port: server.port)
            #expect(run.status == 64, "stderr: \(run.stderr)")
            #expect(run.stderr.contains("open-file limit"), "stderr: \(run.stderr)")
        }
    }
}
