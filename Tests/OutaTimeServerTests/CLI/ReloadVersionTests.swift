import OutaTimeTestSupport
import Foundation
import OutaTimeProtocol
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The executables as an operator meets them: `--version`, a tokens file
/// refused at start, and SIGHUP reloading the tokens file of a running
/// `outatime-server`.
@Suite("executable reload and version", .timeLimit(.minutes(3)))
struct ReloadVersionTests {
    @Test("every binary answers --version with the one version line", arguments: ["outatime-server", "outatime", "outatime-load"])
    func version(tool: String) throws {
        let run = try ToolRun.run(tool, ["--version"], timeout: 30)
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(run.stdout == OutaTimeVersion.versionLine + "\n", "stdout: \(run.stdout)")
        #expect(OutaTimeVersion.versionLine == "\(OutaTimeVersion.number) (protocol 1)")
    }

    @Test("a tokens file with a bad pattern stops the server at start with exit 64, naming the pattern")
    func badPatternAtStart() throws {
        let file = try TokensFile([tokenEntry("board-1885", "Board", "watch", channels: ["starport/lobby*"])])
        let server = try ServerProcess(["--port", "0", "--tokens", file.path])
        #expect(server.waitForExit() == 64)
        #expect(server.stderrText.contains("channel pattern 'starport/lobby*'"), "stderr: \(server.stderrText)")
        #expect(!server.stderrText.contains("board-1885"))
    }

    @Test("a token withdrawn by a reload while `outatime timers start` views ends it with 1 and the reason, not 3")
    func withdrawnTokenExitsOne() throws {
        let file = try TokensFile([tokenEntry("otto-1955", "Otto", "operate")])
        let server = try ServerProcess(["--port", "0", "--tokens", file.path, "--log-level", "error"])
        let listening = try #require(server.awaitListening(), "stderr: \(server.stderrText)")
        let connection = ["--port", "\(listening.port)", "--token", "otto-1955", "--timeout", "5"]
        let add = try ToolRun.run("outatime", ["timers", "add", "hup", "--event", "E", "--in", "10m"] + connection, timeout: 20)
        #expect(add.status == 0, "stderr: \(add.stderr)")

        let viewer = Process()
        viewer.executableURL = WatchTests.outatimeURL
        viewer.arguments = ["timers", "start", "hup", "1"] + connection
        let out = Pipe()
        let err = Pipe()
        viewer.standardOutput = out
        viewer.standardError = err
        viewer.standardInput = FileHandle.nullDevice
        try viewer.run()
        defer { if viewer.isRunning { viewer.terminate() } }
        let lines = WatchTests.LineReader(out)
        #expect(lines.wait(timeout: 10) { $0.hasPrefix("viewing #1") } != nil, "\(lines.lines)")

        try file.write([tokenEntry("ada-2015", "Ada", "admin")])
        server.send(signal: SIGHUP)
        let deadline = Date().addingTimeInterval(10)
        while viewer.isRunning && Date() < deadline { usleep(20_000) }
        #expect(!viewer.isRunning, "still viewing after its token was withdrawn")
        viewer.waitUntilExit()
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(viewer.terminationStatus == 1, "stderr: \(stderr)")
        #expect(stderr.contains("unauthorized"), "\(stderr)")
        server.send(signal: SIGTERM)
        #expect(server.waitForExit() == 0)
    }

    @Test("SIGHUP reloads the tokens file: the server survives, keeps its clients and uses the new file")
    func sighupReloads() throws {
        let file = try TokensFile([tokenEntry("wendy-1885", "Wendy", "watch"), tokenEntry("otto-1955", "Otto", "operate")])
        let server = try ServerProcess(["--port", "0", "--tokens", file.path, "--log-level", "info"])
        let listening = try #require(server.awaitListening(), "stderr: \(server.stderrText)")

        let wendy = try TestClient(port: listening.port)
        try wendy.hello(token: "wendy-1885")
        try wendy.call("subscribe", ["channel": "laps/hup"])
        let otto = try TestClient(port: listening.port)
        try otto.hello(token: "otto-1955")

        try file.write([tokenEntry("wendy-1885", "Wendy", "watch"), tokenEntry("ada-2015", "Ada", "admin")])
        server.send(signal: SIGHUP)
        // Otto's token is gone: its bye is the sign the reload ran.
        #expect(try otto.readUntil(type: "error").errorCode == .unauthorized)
        #expect(try otto.readUntil(type: "bye")["reason"] as? String == "unauthorized")
        #expect(server.process.isRunning, "SIGHUP ended the server; stderr: \(server.stderrText)")

        let ada = try TestClient(port: listening.port)
        try ada.hello(token: "ada-2015")
        #expect(try ada.call("publish", ["channel": "laps/hup", "data": "reloaded"])[int: "delivered"] == 1)
        #expect(try wendy.readUntil(type: "message")["data"] as? String == "reloaded")

        // A bad file: logged, the old tokens stay.
        try file.write(text: "[{\"token\": \"wendy-1885\"")
        server.send(signal: SIGHUP)
        var logged = false
        for _ in 0..<500 where !logged {  // up to 10 s
            logged = server.stderrText.contains("tokens file not reloaded")
            if !logged { usleep(20_000) }
        }
        #expect(logged, "no error line; stderr: \(server.stderrText)")
        let errorLine = server.stderrText.split(separator: "\n").first { $0.contains("tokens file not reloaded") }
        #expect(errorLine?.contains("error") == true && errorLine?.contains(file.path) == true, "\(String(describing: errorLine))")
        #expect(server.process.isRunning)
        let again = try TestClient(port: listening.port)
        #expect(try again.hello(token: "ada-2015")["role"] as? String == "admin")
        #expect(try wendy.request("ping").isOK)
        #expect(!server.stderrText.contains("wendy-1885") && !server.stderrText.contains("ada-2015"), "a token was logged")

        server.send(signal: SIGTERM)
        #expect(try wendy.readUntil(type: "bye")["reason"] as? String == "server_shutdown")
        #expect(server.waitForExit() == 0, "stderr: \(server.stderrText)")
    }
}
