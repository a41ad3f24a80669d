import OutaTimeTestSupport
import Foundation
import Testing

/// The `outatime` executable's one-shot commands, run as a user would run
/// them, against a real in-process server.
@Suite("outatime CLI")
struct CLITests {
    /// Runs `outatime ARGS --port PORT` and waits (bounded) for it to exit.
    static func outatime(_ arguments: [String], port: Int) throws -> ToolRun {
        try ToolRun.run("outatime", arguments + ["--port", "\(port)", "--name", "cli-test", "--timeout", "5"], timeout: 20)
    }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test("quote prints a readable result, --json the exact numbers")
    func quote() throws {
        try withTestServer { server in
            let text = try Self.outatime(["quote", "SWingV2", "AC"], port: server.port)
            #expect(text.status == 0, "stderr: \(text.stderr)")
            #expect(text.stdout.contains("70000 km"))
            #expect(text.stdout.contains("7.80 h"))
            let json = try Self.outatime(["quote", "swingv2", "a-c", "--json"], port: server.port)
            #expect(json.status == 0)
            let result = try Self.json(json.stdout)
            #expect(result["distance_km"] as? Int == 70_000)
            #expect(result["duration_s"] as? Int == 28_080)
        }
    }

    @Test("a refused request exits 1 with the server's message")
    func serverErrorExitCode() throws {
        try withTestServer { server in
            let run = try Self.outatime(["quote", "SWingV2", "AF"], port: server.port)
            #expect(run.status == 1)
            #expect(run.stderr.contains("invalid_path"))
            #expect(run.stderr.contains("F"))
            #expect(run.stdout.isEmpty)
        }
    }

    @Test("an unreachable server exits 3; a bad flag exits 64")
    func connectionAndUsageErrors() throws {
        try withTestServer { server in
            let port = server.port
            server.stop()
            let run = try Self.outatime(["list"], port: port)
            #expect(run.status == 3)
            #expect(run.stderr.contains("cannot reach"))
            let usage = try Self.outatime(["timers", "add", "x", "--event", "e"], port: port)
            #expect(usage.status == 64)
            #expect(usage.stderr.contains("--in"))
        }
    }

    @Test("delorean, timers and laps commands change state; get, list and history show it")
    func operateAndRead() throws {
        try withTestServer { server in
            let port = server.port
            #expect(try Self.outatime(["delorean", "set-destination", "main", "1955-11-12T22:04:00Z"], port: port).status == 0)
            let add = try Self.outatime(["timers", "add", "hill-valley", "--event", "Clock tower", "--in", "1h30m", "--json"], port: port)
            #expect(add.status == 0, "stderr: \(add.stderr)")
            #expect(try Self.json(add.stdout)["remaining_s"] as? Int == 5_400)
            #expect(try Self.outatime(["laps", "start", "run"], port: port).status == 0)
            #expect(try Self.outatime(["laps", "reset", "run"], port: port).status == 1)  // running: stop first

            let get = try Self.outatime(["get", "delorean/main", "--json"], port: port)
            let state = try #require(try Self.json(get.stdout)["state"] as? [String: Any])
            #expect(state["destination_time"] as? String == "1955-11-12T22:04:00Z")

            let list = try Self.outatime(["list"], port: port)
            #expect(list.status == 0)
            for channel in ["delorean/main", "timers/hill-valley", "laps/run"] {
                #expect(list.stdout.contains(channel), "list: \(list.stdout)")
            }
            let history = try Self.outatime(["history", "delorean/main"], port: port)
            #expect(history.stdout.contains("#1"))
            #expect(history.stdout.contains("destination_set"))
        }
    }

    @Test("publish reports deliveries; stats reports counters")
    func publishAndStats() throws {
        try withTestServer { server in
            let publish = try Self.outatime(["publish", "delorean/main", "{\"hello\": 1}", "--json"], port: server.port)
            #expect(publish.status == 0)
            #expect(try Self.json(publish.stdout)["delivered"] as? Int == 0)
            let stats = try Self.outatime(["stats", "--json"], port: server.port)
            #expect(try Self.json(stats.stdout)["messages_published"] as? Int == 1)
            // The readable form: an empty object (`accept_errors` with
            // none) reads `none`, not an empty value.
            let readable = try Self.outatime(["stats"], port: server.port)
            #expect(readable.status == 0)
            #expect(readable.stdout.contains("accept_errors: none"), "\(readable.stdout)")
        }
    }
}
