import Foundation
import OutaTimeServer
import OutaTimeTestSupport
import Testing

/// `outatime-load http-crowd` against the in-process server with `--http`:
/// a short run, and its refusals.
@Suite("outatime-load http-crowd", .timeLimit(.minutes(3)))
struct LoadHTTPCrowdTests {
    @Test("400 idle HTTP connections, 1 round: pings timed in both phases; the server held at most 256, closed the rest")
    func shortRun() throws {
        try withTestServer({ $0.http = HTTPEndpoint(port: 0) }) { server in
            let run = try LoadHarnessTests.load([
                "http-crowd", "--http-port", "\(server.httpPort)", "--idle", "400", "--rounds", "1",
                "--phase-seconds", "3", "--ping-interval-ms", "2", "--bad-per-tick", "1", "--json",
            ], port: server.port)
            #expect(run.status == 0, "stderr: \(run.stderr)\nstdout: \(run.stdout)")
            let result = try #require(JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any],
                                      "stdout: \(run.stdout)\nstderr: \(run.stderr)")
            #expect(result["ok"] as? Bool == true)
            #expect(((result["ping_baseline"] as? [String: Any])?["count"] as? Int ?? 0) > 0, "\(result)")
            #expect(((result["ping_load"] as? [String: Any])?["count"] as? Int ?? 0) > 0, "\(result)")
            #expect(result["ping_errors"] as? Int == 0)
            let opened = result["http_opened"] as? Int ?? -1
            let closed = result["http_closed_by_server"] as? Int ?? -1
            let held = result["http_held_to_end"] as? Int ?? -1
            let bad = result["bad_sent"] as? Int ?? -1
            #expect(opened == 400, "\(result)")
            // Idle connections beyond the cap were closed; what stayed open is
            // at most the cap plus bad requests still in flight.
            #expect(closed >= 400 - 256, "\(result)")
            #expect(held <= 256 + bad, "\(result)")
            #expect(result["http_connect_failures"] as? Int == 0)
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
