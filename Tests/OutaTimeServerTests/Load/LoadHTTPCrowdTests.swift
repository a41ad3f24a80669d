import Foundation
import OutaTimeServer
import OutaTimeTestSupport
import Testing

/// `outatime-load http-crowd` against the in-process server with `--http`:
/// a short run, and its refusals.
@Suite("outatime-load http-crowd", .timeLimit(.minutes(3)))
struct LoadHTTPCrowdTests {
    @Test("400 idle HTTP connections, 1 round: pings timed in both phases; the idle ones wait without costing the server, the bad requests get their status")
    func shortRun() throws {
        // The crowd comes from one address: without the per-address cap
        // (16 by default, whose refusals HTTPExposureTests shows), this is
        // the global cap's behaviour.
        try withTestServer({ $0.http = HTTPEndpoint(port: 0); $0.maxHTTPConnectionsPerAddress = 100_000 }) { server in
            let run = try LoadHarnessTests.load([
                "http-crowd", "--http-port", "\(server.httpPort)", "--idle", "400", "--rounds", "1",
                "--phase-seconds", "3", "--ping-interval-ms", "2", "--bad-per-tick", "1", "--json",
            ], port: server.port)
            #expect(run.status == 0, "stderr: \(run.stderr)\nstdout: \(run.stdout)")
            let result = try LoadHarnessTests.json(run)
            #expect(result["ok"] as? Bool == true)
            #expect(((result["ping_baseline"] as? [String: Any])?["count"] as? Int ?? 0) > 0, "\(result)")
            #expect(((result["ping_load"] as? [String: Any])?["count"] as? Int ?? 0) > 0, "\(result)")
            #expect(result["ping_errors"] as? Int == 0)
            func count(_ key: String) -> Int { result[key] as? Int ?? -1 }
            // 400 fit in the listener's queue: all connect. Under the cap,
            // the server closes only half heads (every 10th: 40), at the
            // head timeout (2 s); the silent ones are not even handed to it
            // (5 s deferral).
            #expect(count("http_opened") == 400, "\(result)")
            #expect(count("http_connect_failures") == 0, "\(result)")
            #expect((0...40).contains(count("http_closed_by_server")), "\(result)")
            #expect(count("http_closed_by_server") + count("http_held_to_end") == 400, "\(result)")
            // Every bad request ends one way or another, and at least one
            // was answered with its status (the cap is free).
            let bad = count("bad_sent")
            let statuses = count("bad_400") + count("bad_405") + count("bad_431")
            #expect(bad > 0 && statuses > 0, "\(result)")
            #expect(count("bad_other_status") == 0, "\(result)")
            #expect(statuses + count("bad_closed_without_status") + count("bad_unanswered_at_end")
                    + count("http_connecting_at_end") >= bad, "\(result)")
        }
    }

    @Test("bad values are refused with exit status 64, naming the flag", arguments: [
        (["http-crowd"], "--http-port"),
        (["http-crowd", "--http-port", "9", "--idle=-1"], "--idle must be 0…100000, got -1"),
        (["http-crowd", "--http-port", "9", "--rounds", "0"], "--rounds must be 1…100, got 0"),
        (["http-crowd", "--http-port", "9", "--phase-seconds", "0"], "--phase-seconds must be 1…600, got 0.0"),
        (["http-crowd", "--http-port", "9", "--ping-interval-ms", "0"], "--ping-interval-ms must be 1…1000, got 0"),
    ])
    func validation(arguments: [String], message: String) throws {
        let run = try LoadHarnessTests.load(arguments, port: 1)
        #expect(run.status == 64, "stderr: \(run.stderr)")
        #expect(run.stderr.contains(message), "stderr: \(run.stderr)")
    }
}
