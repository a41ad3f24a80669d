import OutaTimeTestSupport
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `outatime-server` executable run as a child process, as an operator
/// would run it. Killed with SIGKILL if a test leaves it running.
final class ServerProcess {
    /// Next to the test binary: SwiftPM builds both into the same folder.
    static var executableURL: URL {
        let testBinary = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: testBinary).deletingLastPathComponent()
            .appendingPathComponent("outatime-server")
    }

    let folder: TemporaryFolder
    let process = Process()
    private let stdout = Pipe()
    private let stderrPath: String
    private var stdoutBuffer: [UInt8] = []

    /// The database path handed to `--db`.
    var databasePath: String { folder.path("outatime.sqlite") }

    /// Starts the executable with `arguments`; `--db` is added unless given.
    /// `launcher` runs it (a command that execs its arguments, so the process
    /// id stays the server's): util-linux `prlimit --nofile=N:N --`, or
    /// `setpriv --reuid=… --`. `executable` replaces the built one (a copy
    /// another user may run). `environment` is added to the test's own.
    init(_ arguments: [String], launcher: [String] = [], executable: URL = ServerProcess.executableURL,
         folder: TemporaryFolder? = nil, environment: [String: String] = [:]) throws {
        self.folder = try folder ?? TemporaryFolder()
        stderrPath = self.folder.path("stderr-\(UUID().uuidString.prefix(8)).txt")
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        let serverArguments = arguments.contains("--db") ? arguments : arguments + ["--db", self.folder.path("outatime.sqlite")]
        if let program = launcher.first {
            process.executableURL = URL(fileURLWithPath: program)
            process.arguments = Array(launcher.dropFirst()) + [executable.path] + serverArguments
        } else {
            process.executableURL = executable
            process.arguments = serverArguments
        }
        process.standardOutput = stdout
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
        process.standardInput = FileHandle.nullDevice
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        try ServerProcess.withSignalsUnblocked { try process.run() }
    }

    /// Runs `body` with SIGINT, SIGTERM and SIGHUP unblocked on this thread. Test code
    /// runs on dispatch worker threads, which block most signals, and a
    /// spawned child inherits that mask: it would never see the signals the
    /// tests send. The thread's own mask is restored afterwards.
    private static func withSignalsUnblocked(_ body: () throws -> Void) rethrows {
        var unblock = sigset_t()
        sigemptyset(&unblock)
        sigaddset(&unblock, SIGINT)
        sigaddset(&unblock, SIGTERM)
        sigaddset(&unblock, SIGHUP)
        var previous = sigset_t()
        pthread_sigmask(SIG_UNBLOCK, &unblock, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        try body()
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// Everything the process wrote to stderr so far.
    var stderrText: String {
        (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
    }

    /// The next stdout line, or nil at EOF or after `timeout` seconds.
    func readLine(timeout: Double = 30) -> String? {
        let fd = stdout.fileHandleForReading.fileDescriptor
        let deadline = Date().addingTimeInterval(timeout)
        var chunk = [UInt8](repeating: 0, count: 4096)
        for _ in 0..<10_000 {
            if let newline = stdoutBuffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: stdoutBuffer[..<newline], as: UTF8.self)
                stdoutBuffer.removeSubrange(...newline)
                return line
            }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { return nil }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let rc = poll(&pfd, 1, Int32(remaining * 1000 + 1))
            if rc < 0 && errno != EINTR { return nil }
            guard rc > 0 else { continue }
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if n == 0 { return nil }
            if n > 0 { stdoutBuffer += chunk[..<n] }
        }
        return nil
    }

    /// Reads stdout up to the `listening on HOST:PORT` line and returns the
    /// host and port it names.
    func awaitListening(timeout: Double = 30) -> (host: String, port: Int)? {
        let deadline = Date().addingTimeInterval(timeout)
        for _ in 0..<100 {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0, let line = readLine(timeout: remaining) else { return nil }
            guard line.hasPrefix("listening on ") else { continue }
            let address = line.dropFirst("listening on ".count)
            guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]) else {
                return nil
            }
            return (String(address[..<colon]), port)
        }
        return nil
    }

    /// Reads stdout until every listener named in `prefixes` (`""` for the
    /// protocol's, `"http "`, `"tls "`) announced its `…listening on
    /// HOST:PORT` line, in whatever order; returns prefix → port, or nil.
    func awaitListeners(_ prefixes: Set<String>, timeout: Double = 30) -> [String: Int]? {
        let deadline = Date().addingTimeInterval(timeout)
        var ports: [String: Int] = [:]
        for _ in 0..<100 where ports.count < prefixes.count {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0, let line = readLine(timeout: remaining),
                  let marker = line.range(of: "listening on "),
                  let port = Int(line[line.index(after: line.lastIndex(of: ":") ?? line.startIndex)...]) else { continue }
            let prefix = String(line[..<marker.lowerBound])
            if prefixes.contains(prefix) { ports[prefix] = port }
        }
        return ports.count == prefixes.count ? ports : nil
    }

    /// Sends `signal` to the process.
    func send(signal: Int32) {
        kill(process.processIdentifier, signal)
    }

    /// The exit status once the process has exited, or nil if it is still
    /// running after `timeout` seconds (polled every 20 ms).
    func waitForExit(timeout: Double = 15) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            guard Date() < deadline else { return nil }
            usleep(20_000)
        }
        return process.terminationStatus
    }
}
