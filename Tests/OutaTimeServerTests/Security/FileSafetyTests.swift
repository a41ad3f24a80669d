import Foundation
import OutaTimeServer
import OutaTimeTestKit
import OutaTimeTestSupport
import Testing

/// The executable and the files it makes and reads: the lock file is never
/// followed through a symbolic link, new files are for the owner only, core
/// dumps are off, and secret files others may read are warned about.
@Suite("file safety", .timeLimit(.minutes(3)))
struct FileSafetyTests {
    static let nobody: UInt32 = 65534

    /// Waits up to 10 s for a line of the server's stderr containing every one of `parts`.
    static func logged(_ server: ServerProcess, _ parts: [String]) -> Substring? {
        for _ in 0..<500 {
            if let line = server.stderrText.split(separator: "\n").first(where: { line in parts.allSatisfy(line.contains) }) {
                return line
            }
            usleep(20_000)
        }
        return nil
    }

    @Test("a symbolic link at DB.lock is refused at start, naming it; its target stays untouched")
    func lockFileSymlink() throws {
        let folder = try TemporaryFolder()
        let target = folder.path("precious.txt")
        try "precious\n".write(toFile: target, atomically: false, encoding: .utf8)
        let database = folder.path("outatime.sqlite")
        try FileManager.default.createSymbolicLink(atPath: database + ".lock", withDestinationPath: target)
        let server = try ServerProcess(["--port", "0", "--db", database], folder: folder)
        #expect(server.waitForExit() == 1, "stderr: \(server.stderrText)")
        #expect(server.stderrText.contains("the lock file \(database).lock is a symbolic link"), "\(server.stderrText)")
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "precious\n")
        let attributes = try FileManager.default.attributesOfItem(atPath: target)
        #expect(attributes[.size] as? Int == 9)
    }

    @Test("umask 077: the database and its lock file are made mode 0600; an older 0644 lock file becomes 0600")
    func newFilesForTheOwnerOnly() throws {
        let folder = try TemporaryFolder()
        let database = folder.path("outatime.sqlite")
        let old = FileManager.default.createFile(atPath: database + ".lock", contents: nil, attributes: [.posixPermissions: 0o644])
        #expect(old)
        let server = try ServerProcess(["--port", "0", "--db", database], folder: folder)
        let listening = try #require(server.awaitListening(), "stderr: \(server.stderrText)")
        let client = try TestClient(port: listening.port)
        try client.hello(name: "Marty")
        #expect(try client.request("command", ["channel": "laps/modes", "action": "start"]).isOK)
        for path in [database, database + ".lock", database + "-wal"] {
            let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(path): \(String(mode ?? -1, radix: 8))")
        }
        server.send(signal: SIGTERM)
        #expect(server.waitForExit() == 0, "stderr: \(server.stderrText)")
    }

    @Test("no core dumps: /proc/PID belongs to root while the server runs as nobody (PR_SET_DUMPABLE 0)")
    func notDumpable() throws {
        guard geteuid() == 0 else { return }  // telling the owners apart needs another user
        let folder = try TemporaryFolder()
        #expect(chown(folder.url.path, Self.nobody, Self.nobody) == 0)
        let copy = folder.url.appendingPathComponent("outatime-server")
        try FileManager.default.copyItem(at: ServerProcess.executableURL, to: copy)
        let launcher = ["/usr/bin/setpriv", "--reuid=\(Self.nobody)", "--regid=\(Self.nobody)", "--clear-groups", "--"]
        let server = try ServerProcess(["--port", "0", "--db", folder.path("outatime.sqlite")],
                                       launcher: launcher, executable: copy, folder: folder)
        _ = try #require(server.awaitListening(), "stderr: \(server.stderrText)")
        var info = stat()
        #expect(stat("/proc/\(server.process.processIdentifier)/status", &info) == 0)
        // A dumpable process's /proc files belong to its own user.
        #expect(info.st_uid == 0, "owner \(info.st_uid): the process is dumpable")
        #expect(!server.stderrText.contains("running as root"), "\(server.stderrText)")
        server.send(signal: SIGTERM)
        #expect(server.waitForExit() == 0, "stderr: \(server.stderrText)")
    }

    @Test("a tokens file and a TLS key others may read are warned about at start and at reload; root is warned about")
    func exposedSecretFiles() throws {
        let pki = try TestPKI()
        let identity = try pki.issue("localhost", names: ["localhost"])
        let tokens = try TokensFile([["sha256": String(repeating: "ab", count: 32), "name": "Doc", "role": "admin"]])
        #expect(chmod(tokens.path, 0o600) == 0)
        #expect(chmod(identity.keyFile, 0o644) == 0)
        let server = try ServerProcess(["--port", "0", "--tokens", tokens.path, "--tls-port", "0",
                                        "--tls-cert", identity.certificateFile, "--tls-key", identity.keyFile])
        _ = try #require(server.awaitListening(), "stderr: \(server.stderrText)")
        let key = Self.logged(server, ["warning", "start: the TLS key file \(identity.keyFile) is mode 0644"])
        #expect(key?.contains("make it 0600") == true, "stderr: \(server.stderrText)")
        #expect(!server.stderrText.contains("the tokens file"), "a 0600 tokens file is fine: \(server.stderrText)")
        if geteuid() == 0 {
            #expect(Self.logged(server, ["warning", "running as root"]) != nil, "stderr: \(server.stderrText)")
        }
        // Loosened while running: the reload says so.
        #expect(chmod(tokens.path, 0o604) == 0)
        server.send(signal: SIGHUP)
        #expect(Self.logged(server, ["warning", "reload: the tokens file \(tokens.path) is mode 0604: others may read it"]) != nil,
                "stderr: \(server.stderrText)")
        server.send(signal: SIGTERM)
        #expect(server.waitForExit() == 0, "stderr: \(server.stderrText)")
    }
}
