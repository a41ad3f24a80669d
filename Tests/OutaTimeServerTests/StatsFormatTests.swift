import OutaTimeProtocol
import OutaTimeServer
import OutaTimeTestSupport
import Foundation
import Testing

/// `stats`' `format` field and the counters `outatime top` computes its
/// rates from; `outatime stats --prometheus` read by PyPI
/// `prometheus-client`'s parser and compared with a `/metrics` scrape.
@Suite("stats formats", .timeLimit(.minutes(3)))
struct StatsFormatTests {
    /// Every sample of `text` as `name{label=value,…}` → value, as
    /// `prometheus_client.parser` reads it; fails if the parser refuses it.
    static func parsePrometheus(_ text: String) throws -> [String: Double] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", """
            import json, sys
            from prometheus_client.parser import text_string_to_metric_families
            samples = {}
            for family in text_string_to_metric_families(sys.stdin.read()):
                for s in family.samples:
                    labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
                    samples[s.name + ("{" + labels + "}" if labels else "")] = s.value
            print(json.dumps(samples))
            """]
        let input = Pipe(), output = Pipe(), errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        input.fileHandleForWriting.write(Data(text.utf8))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let problem = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestClientError.failed("the Prometheus parser refused the text: \(problem)\n\(text)")
        }
        return try JSONDecoder().decode([String: Double].self, from: data)
    }

    @Test("format prometheus answers the /metrics text; an unknown format is invalid_request, naming it")
    func prometheusFormat() throws {
        try withTestServer { server in
            let client = try server.connectReady(name: "Doc")
            let result = try client.call("stats", ["format": "prometheus"])
            #expect(result["format"] as? String == "prometheus")
            let text = try #require(result["text"] as? String)
            let samples = try Self.parsePrometheus(text)
            #expect(samples["outatime_build_info{version=\(OutaTimeVersion.serverName)}"] == 1, "\(samples.keys.sorted())")
            #expect(samples["outatime_connections"] == 1)
            #expect(samples["outatime_commands_total"] == 0)

            let json = try client.call("stats", ["format": "json"])
            #expect(json["connections"] as? Int == 1)

            for bad: Any in ["xml", 1, ""] {
                let reply = try client.request("stats", ["format": bad])
                #expect(reply["ok"] as? Bool == false)
                let error = try #require(reply[object: "error"])
                #expect(error["code"] as? String == "invalid_request", "\(error)")
                let message = error["message"] as? String ?? ""
                #expect(message.contains("'format' must be one of json, prometheus, got "), "\(message)")
                if let text = bad as? String {
                    #expect(message.hasSuffix("got '\(text)' (a string)"), "\(message)")
                } else {
                    #expect(message.hasSuffix("got 1"), "\(message)")
                }
            }
        }
    }

    @Test("commands, store_commit_us and tick_lateness_total_ms move after a command and its ticks")
    func rateCounters() throws {
        try withTestServer({ $0.lapTickMs = 20 }) { server in
            let client = try server.connectReady(name: "Doc")
            let before = try client.call("stats")
            #expect(before["commands"] as? Int == 0)
            try client.call("subscribe", ["channel": "laps/rates"])
            try client.call("command", ["channel": "laps/rates", "action": "start"])
            let refused = try client.request("command", ["channel": "laps/rates", "action": "start"])
            #expect(refused["ok"] as? Bool == false, "starting a running stopwatch is refused by its rules")
            for _ in 0..<3 { _ = try client.readUntil(type: "tick") }
            let after = try client.call("stats")
            #expect(after["commands"] as? Int == 2, "\(after)")
            #expect((after["store_commit_us"] as? Int ?? 0) > 0, "\(after)")
            #expect((after["store_batches"] as? Int ?? 0) >= 1)
            #expect((after["ticks"] as? Int ?? 0) >= 3)
            let total = try #require(after["tick_lateness_total_ms"] as? Int)
            let maximum = try #require(after["tick_lateness_max_ms"] as? Int)
            #expect(total >= maximum, "the sum of the latenesses is at least the largest one")
        }
    }

    @Test("outatime stats --prometheus prints the same families and values as a /metrics scrape")
    func cliMatchesScrape() throws {
        try withTestServer({ $0.http = HTTPEndpoint(port: 0) }) { server in
            let operator_ = try server.connectReady(name: "Doc")
            try operator_.call("command", ["channel": "laps/cli", "action": "start"])
            try operator_.call("command", ["channel": "laps/cli", "action": "stop"])

            let run = try CLITests.outatime(["stats", "--prometheus"], port: server.port)
            #expect(run.status == 0, "stderr: \(run.stderr)")
            let printed = try Self.parsePrometheus(run.stdout)
            let scraped = try MetricsTests.scrape(server)
            // The same series, bar the close of the CLI's own connection,
            // counted after it printed.
            let closes = { (name: String) in name.hasPrefix("outatime_connection_closes_total") }
            #expect(Set(printed.keys.filter { !closes($0) }) == Set(scraped.keys.filter { !closes($0) }),
                    "only printed: \(Set(printed.keys).subtracting(scraped.keys)); only scraped: \(Set(scraped.keys).subtracting(printed.keys))")
            for name in ["outatime_events_committed_total", "outatime_commands_total", "outatime_channels{kind=laps}",
                         "outatime_build_info{version=\(OutaTimeVersion.serverName)}", "outatime_store_batches_total"] {
                #expect(printed[name] != nil && printed[name] == scraped[name], "\(name): \(printed[name] ?? -1) vs \(scraped[name] ?? -1)")
            }
            #expect(printed["outatime_commands_total"] == 2)
            #expect(printed["outatime_events_committed_total"] == 2)

            let refused = try ToolRun.run("outatime", ["stats", "--prometheus", "--port", "1", "--timeout", "2"], timeout: 20)
            #expect(refused.status == 3, "no server there: exit 3; stderr: \(refused.stderr)")
        }
    }
}
