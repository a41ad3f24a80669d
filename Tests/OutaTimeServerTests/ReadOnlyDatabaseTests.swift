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
        // A first run creates the database as the server's user, and stops.
        let first = try ServerProcess(["--port", "0", "--db", database, "--log-level", "error"],
                                      launcher: launcher, executable: executable, folder: folder)
        #expect(first.awaitListening() != nil, "stderr: \(first.stderrText)")
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
        #expect(try operator_.call("list")[objects: "channels"]?.isEmpty == true, "reads are served")
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
