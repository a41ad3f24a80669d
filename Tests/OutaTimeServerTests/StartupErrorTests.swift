import Foundation
import OutaTimeTestKit
import OutaTimeTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The executable refusing to start as an operator meets it: a database it
/// cannot open and a port already taken are said with the path or the
/// address, the flag and the cause, and exit 1 ("cannot start"). Before,
/// SQLite's `unable to open database file` and libuv's `EADDRINUSE` named
/// neither, and a folder that could not be made was blamed on the lock file.
///
/// Permissions do not stop root, so as root the server runs as `nobody`
/// (util-linux `setpriv`, as in ReadOnlyDatabaseTests) from a copy of the
/// executable in a folder that user owns, against folders root owns.
@Suite("startup errors", .timeLimit(.minutes(3)))
struct StartupErrorTests {
    static let nobody: UInt32 = 65534

    /// A folder holding `locked/` (mode 0755, root's when run as root, else
    /// 0555: the server's user may read it but not make files there) and,
    /// as root, a copy of the executable that `nobody` may run.
    final class Sandbox {
        let folder: TemporaryFolder
        let locked: String
        var launcher: [String] = []
        var executable = ServerProcess.executableURL

        init() throws {
            folder = try TemporaryFolder()
            locked = folder.path("locked")
            try FileManager.default.createDirectory(atPath: locked, withIntermediateDirectories: false)
            if geteuid() == 0 {
                let bin = folder.path("bin")
                try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: false)
                #expect(chown(bin, StartupErrorTests.nobody, StartupErrorTests.nobody) == 0)
                let copy = URL(fileURLWithPath: bin).appendingPathComponent("outatime-server")
                try FileManager.default.copyItem(at: executable, to: copy)
                executable = copy
                launcher = ["/usr/bin/setpriv", "--reuid=\(StartupErrorTests.nobody)",
                            "--regid=\(StartupErrorTests.nobody)", "--clear-groups", "--"]
                #expect(chmod(folder.url.path, 0o755) == 0 && chmod(locked, 0o755) == 0)
            }
        }

        /// Makes `locked/` unwritable for the server's user (a no-op as root:
        /// it is root's folder and the server runs as nobody).
        func lock() { if geteuid() != 0 { #expect(chmod(locked, 0o555) == 0) } }

        deinit { chmod(locked, 0o755) }  // so that the folder can be removed

        /// Runs the server with `--db database` until it exits; its status and stderr.
        func start(_ database: String) throws -> (status: Int32?, stderr: String) {
            let server = try ServerProcess(["--port", "0", "--db", database, "--log-level", "error"],
                                           launcher: launcher, executable: executable, folder: folder)
            let status = server.waitForExit()
            return (status, server.stderrText)
        }
    }

    @Test("a database folder that cannot be made: the database, the folder, where, and why; exit 1")
    func folderCannotBeMade() throws {
        let sandbox = try Sandbox()
        sandbox.lock()
        let database = sandbox.locked + "/boards/outatime.sqlite"
        let (status, stderr) = try sandbox.start(database)
        #expect(status == 1, "\(stderr)")
        #expect(stderr.contains("cannot start: cannot open database \(database): folder \(sandbox.locked)/boards "
            + "does not exist and cannot be created in \(sandbox.locked): permission denied"), "\(stderr)")
        #expect(!stderr.contains("lock file"), "the lock file is not the problem: \(stderr)")
    }

    @Test("a folder the server may not write, without the database: names the folder; exit 1")
    func folderNotWritable() throws {
        let sandbox = try Sandbox()
        sandbox.lock()
        let database = sandbox.locked + "/outatime.sqlite"
        let (status, stderr) = try sandbox.start(database)
        #expect(status == 1, "\(stderr)")
        #expect(stderr.contains("cannot open database \(database): folder \(sandbox.locked) is not writable: permission denied"),
                "\(stderr)")
        #expect(!stderr.contains("SQLite error 14"), "\(stderr)")
    }

    @Test("a database file the server may not read: permission denied, naming the file; exit 1")
    func fileNotReadable() throws {
        let sandbox = try Sandbox()
        let database = sandbox.locked + "/outatime.sqlite"
        #expect(FileManager.default.createFile(atPath: database, contents: Data(), attributes: [.posixPermissions: 0o600]))
        if geteuid() != 0 { #expect(chmod(database, 0) == 0) }
        let (status, stderr) = try sandbox.start(database)
        #expect(status == 1, "\(stderr)")
        #expect(stderr.contains("cannot open database \(database): permission denied"), "\(stderr)")
    }

    @Test("a file that is not a database: names it and says so; exit 1")
    func notADatabase() throws {
        let folder = try TemporaryFolder()
        let database = folder.path("outatime.sqlite")
        try Data(repeating: 0x42, count: 4096).write(to: URL(fileURLWithPath: database))
        let server = try ServerProcess(["--port", "0", "--db", database, "--log-level", "error"], folder: folder)
        #expect(server.waitForExit() == 1, "\(server.stderrText)")
        #expect(server.stderrText.contains("cannot open database \(database): file is not a database"), "\(server.stderrText)")
    }

    @Test("a directory where the lock file or SQLite's WAL files go: names it; exit 1", arguments: [".lock", "-wal", "-shm"])
    func directoryInTheWay(suffix: String) throws {
        let folder = try TemporaryFolder()
        let database = folder.path("outatime.sqlite")
        try FileManager.default.createDirectory(atPath: database + suffix, withIntermediateDirectories: false)
        let server = try ServerProcess(["--port", "0", "--db", database, "--log-level", "error"], folder: folder)
        #expect(server.waitForExit() == 1, "\(server.stderrText)")
        #expect(server.stderrText.contains("cannot open database \(database): "), "\(server.stderrText)")
        #expect(server.stderrText.contains("\(database)\(suffix): is a directory")
                || server.stderrText.contains("\(database)\(suffix) is a directory"), "\(server.stderrText)")
    }

    @Test("a port in use: the address, the flag and the likely cause; exit 1", arguments: ["--port", "--tls-port", "--http"])
    func portInUse(flag: String) throws {
        let taken = try OccupiedPort()
        let pki = try TestPKI()
        let identity = try pki.issue("localhost", names: ["127.0.0.1"])
        var arguments = ["--port", flag == "--port" ? "\(taken.port)" : "0", "--log-level", "error"]
        switch flag {
        case "--tls-port":
            arguments += ["--tls-port", "\(taken.port)", "--tls-cert", identity.certificateFile, "--tls-key", identity.keyFile]
        case "--http": arguments += ["--http", "127.0.0.1:\(taken.port)"]
        default: break
        }
        let server = try ServerProcess(arguments)
        #expect(server.waitForExit() == 1, "\(server.stderrText)")
        #expect(server.stderrText.contains(
            "cannot start: cannot listen on 127.0.0.1:\(taken.port) (\(flag)): address already in use (another outatime-server?)"),
            "\(server.stderrText)")
    }
}

/// A port on 127.0.0.1 held by a listening socket of the test's own, as
/// another program would hold it.
final class OccupiedPort {
    let descriptor: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                Glibc.bind(fd, address, length) == 0 && listen(fd, 1) == 0 && getsockname(fd, address, &length) == 0
            }
        }
        descriptor = fd
        guard bound else { throw POSIXError(.EADDRINUSE) }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(descriptor) }
}
