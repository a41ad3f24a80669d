import OutaTimeTestSupport
import Foundation
import OutaTimeProtocol
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The `outatime-server` executable as an operator runs it: flags, the
/// listening line, signals and exit codes.
@Suite("executable", .timeLimit(.minutes(3)))
struct ExecutableTests {
    @Test("the executable is built next to the tests")
    func executableExists() {
        #expect(FileManager.default.isExecutableFile(atPath: ServerProcess.executableURL.path),
                "no executable at \(ServerProcess.executableURL.path)")
    }

    @Test("SIGTERM and SIGINT: bye server_shutdown to clients, then exit 0", arguments: [SIGTERM, SIGINT])
    func signalShutdown(signal: Int32) throws {
        let server = try ServerProcess(["--port", "0", "--log-level", "error"])
        let listening = try #require(server.awaitListening(), "no 'listening on' line; stderr: \(server.stderrText)")
        #expect(listening.host == "127.0.0.1")
        #expect(listening.port > 0)

        let client = try TestClient(port: listening.port)
        let hello = try client.hello()
        #expect(hello["role"] as? String == "operate")
        try client.call("subscribe", ["channel": "delorean/signal"])

        server.send(signal: signal)
        let bye = try client.readUntil(type: "bye")
        #expect(bye["reason"] as? String == "server_shutdown")
        #expect(client.expectClosed())
        let status = server.waitForExit()
        #expect(status == 0, "exit status \(String(describing: status)); stderr: \(server.stderrText)")
        #expect(server.process.terminationReason == .exit)
    }

    @Test("flags reach the server: heartbeat and max_frame in the hello result")
    func flagsReachServer() throws {
        let server = try ServerProcess(["--port", "0", "--heartbeat-ms", "4000", "--max-frame", "2048",
                                        "--delorean-tick-ms", "50", "--lap-tick-ms", "50", "--history-limit", "2000",
                                        "--log-level", "error"])
        let listening = try #require(server.awaitListening(), "stderr: \(server.stderrText)")
        let client = try TestClient(port: listening.port)
        let hello = try client.hello()
        #expect(hello[int: "heartbeat_ms"] == 4000)
        #expect(hello[int: "max_frame"] == 2048)
        server.send(signal: SIGTERM)
        #expect(server.waitForExit() == 0)
        #expect(FileManager.default.fileExists(atPath: server.databasePath), "--db not used")
    }

    @Test("a database folder that does not exist yet is created")
    func databaseFolderCreated() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("nested/deeper/outatime.sqlite")
        let server = try ServerProcess(["--port", "0", "--db", path, "--log-level", "error"])
        #expect(server.awaitListening() != nil, "stderr: \(server.stderrText)")
        server.send(signal: SIGTERM)
        #expect(server.waitForExit() == 0)
        #expect(FileManager.default.fileExists(atPath: path))
    }

    @Test("a --db that cannot name a database file is refused with 64, naming --db and the path", arguments: [
        ("", "--db is empty"), ("FOLDER", "is a folder"), ("FILE/outatime.sqlite", "is a file, not a folder"),
    ])
    func badDatabasePath(path: String, says: String) throws {
        let folder = try TemporaryFolder()
        #expect(FileManager.default.createFile(atPath: folder.path("FILE"), contents: Data()))
        try FileManager.default.createDirectory(atPath: folder.path("FOLDER"), withIntermediateDirectories: false)
        let given = path.isEmpty ? "" : folder.path(path)
        let server = try ServerProcess(["--port", "0", "--db", given, "--log-level", "error"])
        #expect(server.waitForExit() == 64, "stderr: \(server.stderrText)")
        #expect(server.stderrText.contains("--db") && server.stderrText.contains(says), "\(server.stderrText)")
        #expect(given.isEmpty || server.stderrText.contains(given))
    }

    @Test("a non-loopback host without --allow-anonymous is refused")
    func refusesAnonymousPublicHost() throws {
        let server = try ServerProcess(["--host", "0.0.0.0", "--port", "0", "--log-level", "error"])
        let status = server.waitForExit()
        #expect(status != nil && status != 0, "exit status \(String(describing: status))")
        #expect(status == 64, "a configuration error exits with EX_USAGE (64), like every invalid flag")
        #expect(server.readLine(timeout: 1)?.hasPrefix("listening on") != true, "it listened anyway")
        let stderr = server.stderrText
        #expect(!stderr.isEmpty, "no message on stderr")
        #expect(stderr.contains("allow-anonymous"), "the message should say how to allow it: \(stderr)")
    }

    @Test("a plaintext listener on a non-loopback host without --allow-plaintext is refused")
    func refusesPublicPlaintext() throws {
        let server = try ServerProcess(["--host", "0.0.0.0", "--port", "0", "--allow-anonymous", "--log-level", "error"])
        let status = server.waitForExit()
        #expect(status == 64, "a configuration error exits with EX_USAGE (64): \(String(describing: status))")
        let stderr = server.stderrText
        #expect(stderr.contains("refusing a plaintext listener on non-loopback address 0.0.0.0"), "\(stderr)")
        #expect(stderr.contains("--allow-plaintext") && stderr.contains("--no-plain"), "says how to fix it: \(stderr)")
    }

    @Test("a non-loopback host with --allow-anonymous and --allow-plaintext listens")
    func allowAnonymousPublicHost() throws {
        let server = try ServerProcess(["--host", "0.0.0.0", "--port", "0", "--allow-anonymous", "--allow-plaintext",
                                        "--log-level", "error"])
        let listening = try #require(server.awaitListening(), "stderr: \(server.stderrText)")
        #expect(listening.host == "0.0.0.0")
        let client = try TestClient(port: listening.port)
        #expect(try client.hello()["role"] as? String == "operate")
        server.send(signal: SIGTERM)
        #expect(server.waitForExit() == 0)
    }

    @Test("--tokens FILE: roles from the file, unauthorized without a token")
    func tokensFile() throws {
        let folder = try TemporaryFolder()
        let tokensPath = folder.path("tokens.json")
        try Data(#"""
        [{"token": "w-1885-Qm7vX2kR9tL4wZ8p", "name": "Wendy", "role": "watch"},
         {"token": "o-1955-N3cF6hJ1sD5gY0bV", "name": "Otto", "role": "operate"}]
        """#.utf8).write(to: URL(fileURLWithPath: tokensPath))
        let server = try ServerProcess(["--port", "0", "--tokens", tokensPath, "--log-level", "error"])
        let listening = try #require(server.awaitListening(), "stderr: \(server.stderrText)")

        let anonymous = try TestClient(port: listening.port)
        #expect(try anonymous.request("hello", ["protocol": 1]).errorCode == .unauthorized)
        #expect(try anonymous.readUntil(type: "bye")["reason"] as? String == "unauthorized")
        #expect(anonymous.expectClosed())

        let watcher = try TestClient(port: listening.port)
        #expect(try watcher.hello(token: "w-1885-Qm7vX2kR9tL4wZ8p")["role"] as? String == "watch")
        #expect(try watcher.request("publish", ["channel": "laps/x", "data": 1]).errorCode == .forbidden)
        let op = try TestClient(port: listening.port)
        #expect(try op.hello(token: "o-1955-N3cF6hJ1sD5gY0bV")["role"] as? String == "operate")
        #expect(try op.request("publish", ["channel": "laps/x", "data": 1]).isOK)

        server.send(signal: SIGTERM)
        #expect(server.waitForExit() == 0)
        #expect(!server.stderrText.contains("Qm7vX2kR9tL4wZ8p") && !server.stderrText.contains("N3cF6hJ1sD5gY0bV"), "token in logs")
    }

    @Test("an unreadable tokens file is refused with a non-zero exit")
    func badTokensFile() throws {
        let folder = try TemporaryFolder()
        let tokensPath = folder.path("tokens.json")
        try Data("not json".utf8).write(to: URL(fileURLWithPath: tokensPath))
        let server = try ServerProcess(["--port", "0", "--tokens", tokensPath, "--log-level", "error"])
        let status = server.waitForExit()
        #expect(status != nil && status != 0, "exit status \(String(describing: status))")
        #expect(!server.stderrText.isEmpty)
    }
}
