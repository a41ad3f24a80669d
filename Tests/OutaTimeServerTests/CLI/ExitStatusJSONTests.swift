import OutaTimeTestSupport
import Foundation
import OutaTimeServer
@testable import outatime
import Testing

/// How `outatime` ends when the server refuses it or cannot be reached (the
/// same statuses for one-shot commands, `watch` and `top`), and the JSON
/// lines of `watch --json` and `top --json`, against real servers.
@Suite("outatime exit statuses and JSON lines")
struct ExitStatusJSONTests {
    static let tokens = [AccessToken(token: "operator-secret-1955", name: "Otto", role: .operate)]

    /// The lines of `text`, each parsed as a JSON object.
    static func objects(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { line in
            try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not an object: \(line)")
        }
    }

    @Test("a token the server does not accept exits 1 with its refusal, in every command",
          arguments: [["list"], ["watch", "laps/run", "--for", "30"], ["top", "--interval", "0.2"]])
    func refusedToken(command: [String]) throws {
        try withTestServer({ $0.tokens = Self.tokens }) { server in
            let started = Date()
            let run = try CLITests.outatime(command + ["--token", "not-a-token"], port: server.port)
            #expect(run.status == 1, "stdout: \(run.stdout) stderr: \(run.stderr)")
            #expect(run.stderr.contains("refused the connection: unauthorized"), "\(run.stderr)")
            #expect(Date().timeIntervalSince(started) < 15, "it ended because of the refusal, not a timer")
            let allowed = try CLITests.outatime(["list", "--token", "operator-secret-1955"], port: server.port)
            #expect(allowed.status == 0, "stderr: \(allowed.stderr)")
        }
    }

    @Test("a server that cannot be reached exits 3, in every command, without waiting for --for",
          arguments: [["list"], ["watch", "laps/run", "--for", "30"], ["top", "--interval", "0.2"]])
    func unreachable(command: [String]) throws {
        let port = try withTestServer { server in
            let port = server.port
            server.stop()
            return port
        }
        let started = Date()
        let run = try CLITests.outatime(command, port: port)
        #expect(run.status == 3, "stdout: \(run.stdout) stderr: \(run.stderr)")
        #expect(run.stderr.contains("cannot reach the OutaTime server at 127.0.0.1:\(port)"), "\(run.stderr)")
        #expect(Date().timeIntervalSince(started) < 15)
    }

    @Test("control characters from the server never reach the terminal: printed as �, escaped in JSON")
    func serverTextIsSanitized() throws {
        try withTestServer { server in
            // The server quotes the bad channel name in its message, raw.
            let name = "laps/\u{1B}]0;pwned\u{07}\u{1B}[31mred\u{9B}"
            let run = try CLITests.outatime(["get", name], port: server.port)
            #expect(run.status == 1, "stderr: \(run.stderr)")
            #expect(run.stderr.contains("invalid_channel") && run.stderr.contains("\u{FFFD}]0;pwned"), "\(run.stderr.debugDescription)")
            #expect(!run.stderr.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" || (0x7F...0x9F).contains($0.value) },
                    "\(run.stderr.debugDescription)")
        }
        #expect(Output.escapingControls("{\"a\":\"x\u{9B}y\u{7F}\"}") == "{\"a\":\"x\\u009by\\u007f\"}")
    }

    @Test("watch --json prints one object a line: connection, sync, then the pushes as sent")
    func watchJSON() throws {
        try withTestServer({ $0.lapTickMs = 20 }) { server in
            let start = try CLITests.outatime(["laps", "start", "run"], port: server.port)
            #expect(start.status == 0, "stderr: \(start.stderr)")
            let run = try CLITests.outatime(["watch", "laps/run", "--for", "3", "--json"], port: server.port)
            #expect(run.status == 0, "stderr: \(run.stderr)")
            let objects = try Self.objects(run.stdout)
            let types = objects.compactMap { $0["type"] as? String }
            #expect(types.count == objects.count, "every line has a type: \(run.stdout)")
            #expect(Array(types.prefix(3)) == ["connection", "connection", "sync"], "\(types)")
            #expect(objects[1]["state"] as? String == "connected")
            #expect(objects[2]["channel"] as? String == "laps/run" && objects[2]["method"] as? String == "snapshot")
            let ticks = objects.filter { $0["type"] as? String == "tick" }
            #expect(ticks.count >= 2, "\(types)")
            let data = try #require(ticks.first?["data"] as? [String: Any])
            #expect(data["lap_number"] as? Int == 1 && data["total_elapsed_ms"] is Int, "\(data)")
        }
    }

    @Test("top --json prints one object an interval with the rates, and no header")
    func topJSON() throws {
        try withTestServer { server in
            let run = try CLITests.outatime(["top", "--interval", "0.2", "--count", "2", "--json"], port: server.port)
            #expect(run.status == 0, "stderr: \(run.stderr)")
            let objects = try Self.objects(run.stdout)
            try #require(objects.count == 2, "stdout:\n\(run.stdout)")
            for object in objects {
                #expect(object["connections"] as? Int == 1, "top's own connection: \(object)")
                #expect(object["commands_per_s"] is NSNumber && object["deliveries_per_s"] is NSNumber, "\(object)")
                #expect((object["slowest_channels"] as? [Any])?.isEmpty == true, "\(object)")
                #expect(((object["seconds"] as? Double) ?? 0) > 0.1, "\(object)")
            }
        }
    }
}
