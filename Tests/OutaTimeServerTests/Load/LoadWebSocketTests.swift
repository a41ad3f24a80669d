import OutaTimeServer
import OutaTimeTestSupport
import Foundation
import Testing

/// `outatime-load --transport ws`: the scenarios' connections upgrade the
/// HTTP listener's `/ws` and speak masked text frames, against the real
/// server; every report names the transport and counts the connections.
@Suite("outatime-load over WebSocket")
struct LoadWebSocketTests {
    /// A server with the HTTP listener, room for the harness's connections on it.
    static func withServer(_ body: (TestServer) throws -> Void) throws {
        try withTestServer({ config in
            config.http = HTTPEndpoint(port: 0)
            config.maxHTTPConnectionsPerAddress = 100
        }, body)
    }

    @Test("fanout --transport ws: 10 subscribers × 200 messages, each delivered exactly once, 11 WebSocket connections")
    func fanout() throws {
        try Self.withServer { server in
            let run = try ToolRun.run("outatime-load", [
                "fanout", "--transport", "ws", "--port", "\(server.httpPort)", "--subscribers", "10", "--messages", "200",
                "--duration", "10", "--stall-timeout", "10", "--json",
            ])
            #expect(run.status == 0, "stderr: \(run.stderr)\nstdout: \(run.stdout)")
            let result = try LoadHarnessTests.json(run)
            #expect(result["delivered"] as? Int == 10 * 200)
            #expect(result["lost"] as? Int == 0 && result["duplicated"] as? Int == 0 && result["errors"] as? Int == 0)
            #expect(result["transport"] as? String == "ws")
            #expect(result["connections_opened"] as? Int == 11)
        }
    }

    @Test("the table's last row names the transport; tcp is the default")
    func tableRow() throws {
        try Self.withServer { server in
            let ws = try ToolRun.run("outatime-load", [
                "fanout", "--transport", "ws", "--port", "\(server.httpPort)", "--subscribers", "2", "--messages", "20",
                "--duration", "10",
            ])
            #expect(ws.status == 0, "stderr: \(ws.stderr)")
            #expect(ws.stdout.contains("ws (/ws): 3 WebSocket connections opened"), "\(ws.stdout)")
            let tcp = try ToolRun.run("outatime-load", [
                "fanout", "--port", "\(server.port)", "--subscribers", "2", "--messages", "20", "--duration", "10",
            ])
            #expect(tcp.status == 0, "stderr: \(tcp.stderr)")
            #expect(tcp.stdout.contains("tcp: 3 connections opened"), "\(tcp.stdout)")
        }
    }

    @Test("commands --transport ws: durable commands acknowledged over WebSocket")
    func commands() throws {
        try Self.withServer { server in
            let run = try ToolRun.run("outatime-load", [
                "commands", "--transport", "ws", "--port", "\(server.httpPort)", "--clients", "3", "--duration", "1", "--json",
            ])
            #expect(run.status == 0, "stderr: \(run.stderr)\nstdout: \(run.stdout)")
            let result = try LoadHarnessTests.json(run)
            #expect(result["errors"] as? Int == 0)
            #expect((result["acknowledged"] as? Int ?? 0) > 0, "\(result)")
            #expect(result["transport"] as? String == "ws")
        }
    }

    @Test("a refused upgrade is an error naming the status: the TCP port is not an HTTP listener, /nope is not /ws")
    func refused() throws {
        try Self.withServer { server in
            let wrongPath = try ToolRun.run("outatime-load", [
                "fanout", "--transport", "ws", "--ws-path", "/nope", "--port", "\(server.httpPort)",
                "--subscribers", "1", "--messages", "5", "--duration", "5", "--json",
            ])
            #expect(wrongPath.status != 0)
            #expect((try LoadHarnessTests.json(wrongPath)["first_error"] as? String ?? "").contains("404"), "\(wrongPath.stdout)")
        }
    }
}
