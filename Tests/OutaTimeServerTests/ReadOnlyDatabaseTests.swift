import Foundation
import OutaTimeProtocol
import OutaTimeTestSupport
import Testing

/// The real executable on a database file it may not write (mode 0444):
/// it starts and serves reads, a command that must store fails with
/// `internal`, and `/healthz` says 503 from then on. Tests run as root,
/// whom 0444 does not stop, so as root the server runs as `nobody` (util-linux
/// `setpriv`) from a copy of the executable in a folder that user owns.
@Suite("read-only database", .timeLimit(.minutes(3)))
struct ReadOnlyDatabaseTests {
    static let nobody: UInt32 = 65534

    @Test("a 0444 database: the command gets internal naming the read-only database, /healthz 503, /readyz 200")
    func readOnlyFile() throws {
        let folder = try TemporaryFolder()
        let database = folder.path("outatime.sqlite")
        var launcher: [String] = []
        var executable = ServerProcess.executableURL
        if geteuid() == 0 {
            #expect(chown(folder.url.path, Self.nobody, Self.nobody) == 0)
            let copy = folder.url.appendingPathComponent("outatime-server")
            try FileManager.default.copyItem(at: executable, to: copy)
            executable = copy
            launcher = ["/usr/bin/setpriv", "--reuid=\(Self.nobody)", "--regid=\(Self.nobody)", "--clear-groups", "--"]
        }
        // A first run creates the database as the server's user, stores
        // events (they stay in the log's tail until the next start folds
        // them into the indexed log: a write), and stops.
        let first = try ServerProcess(["--port", "0", "--db", database, "--log-level", "error"],
                                      launcher: launcher, executable: executable, folder: folder)
        let firstListening = try #require(first.awaitListening(), "stderr: \(first.stderrText)")
        let writer = try TestClient(port: firstListening.port)
        try writer.hello(name: "Marty")
        #expect(try writer.request("command", ["channel": "laps/before", "action": "start"]).isOK)
        #expect(try writer.request("command", ["channel": "laps/before", "action": "lap"]).isOK)
        first.send(signal: SIGTERM)
        #expect(first.waitForExit() == 0, "stderr: \(first.stderrText)")
        #expect(chmod(database, 0o444) == 0)

        let server = try ServerProcess(["--port", "0", "--http", "0", "--db", database, "--log-level", "error"],
                                       launcher: launcher, executable: executable, folder: folder)
        let listening = try #require(server.awaitListening(), "stderr: \(server.stderrText)")
        let httpLine = try #require(server.readLine(), "stderr: \(server.stderrText)")
        let httpPort = try #require(Int(httpLine.split(separator: ":").last ?? ""), "\(httpLine)")
        let http = try TestClient(port: httpPort)
        #expect(try HTTPListenerTests.get(http, "/healthz").status == 200, "no write has failed yet")

        let operator_ = try TestClient(port: listening.port)
        try operator_.hello(name: "Doc")
        #expect(try operator_.request("ping").isOK)
        let channels = try operator_.call("list")[objects: "channels"] ?? []
        #expect(channels.map { $0["channel"] as? String } == ["laps/before"], "reads are served")
        #expect(channels.first?[int: "seq"] == 2, "with the events stored last time")
        let history = try operator_.call("history", ["channel": "laps/before"])[objects: "events"] ?? []
        #expect(history.map { $0["event"] as? String } == ["started", "lap_completed"], "\(history)")
        let failed = try operator_.request("command", [
            "channel": "timers/readonly", "action": "add", "args": ["event": "check", "remaining_s": 5],
        ])
        #expect(failed.errorCode == .internal, "\(failed)")
        #expect(failed.errorMessage?.contains("could not store the new channel timers/readonly") == true, "\(failed)")
        #expect(failed.errorMessage?.contains("readonly database") == true, "\(failed)")

        let unhealthy = try HTTPListenerTests.get(http, "/healthz")
        #expect(unhealthy.status == 503, "\(unhealthy)")
        #expect(unhealthy.body.hasPrefix("unhealthy: the store's last write failed: ") && unhealthy.body.contains("readonly database"),
                "\(unhealthy)")
        #expect(try HTTPListenerTests.get(http, "/readyz").status == 200, "running: readiness is not health")
        #expect(try operator_.request("ping").isOK, "the connection goes on")
        server.send(signal: SIGTERM)
        #expect(server.waitForExit() != nil, "stderr: \(server.stderrText)")
    }
}
