import Foundation
import Logging
import OutaTimeServer
import Testing

/// A fresh folder under the temp directory, removed when released.
final class TemporaryFolder {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("outatime-e2e-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// The path of `name` inside the folder.
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// The real server, in process, on 127.0.0.1 and a port the OS picked.
final class TestServer {
    /// How long `stop()` waits for the loop to exit before failing the test.
    static let stopTimeout: Double = 20

    let handle: ServerHandle
    let config: ServerConfig
    private var shutdownRequested = false
    private var stopped = false

    /// The bound port.
    var port: Int { handle.port }

    /// Starts a server on `databasePath`; `configure` adjusts the options.
    /// Without a `logger`, only critical messages are printed.
    init(databasePath: String, logger: Logger? = nil, configure: (inout ServerConfig) -> Void = { _ in }) throws {
        var config = ServerConfig()
        config.host = "127.0.0.1"
        config.port = 0
        config.databasePath = databasePath
        configure(&config)
        self.config = config
        var quiet = Logger(label: "outatime.e2e")
        quiet.logLevel = .critical
        handle = try ServerHandle.start(config, logger: logger ?? quiet)
    }

    /// A new raw connection, before `hello`.
    func connect() throws -> TestClient { try TestClient(port: port) }

    /// A new connection that has completed `hello`.
    func connectReady(name: String? = "tester", token: String? = nil) throws -> TestClient {
        let client = try connect()
        try client.hello(name: name, token: token)
        return client
    }

    /// Asks the server to shut down (once) and returns at once.
    func requestShutdown() {
        guard !shutdownRequested else { return }
        shutdownRequested = true
        handle.shutdown()
    }

    /// Shuts down and records an issue unless the loop closed cleanly (no
    /// leaked handle) within ``stopTimeout``. Safe to call more than once.
    func stop(sourceLocation: SourceLocation = #_sourceLocation) {
        guard !stopped else { return }
        stopped = true
        requestShutdown()
        let outcome = WaitOutcome()
        let handle = handle
        // On a helper thread so that a server that never stops fails the
        // test instead of hanging the whole run.
        Thread.detachNewThread { outcome.finish(handle.wait()) }
        guard let clean = outcome.result(within: TestServer.stopTimeout) else {
            Issue.record("server loop did not exit within \(TestServer.stopTimeout) s of shutdown", sourceLocation: sourceLocation)
            return
        }
        #expect(clean, "wait() returned false: uv_loop_close failed, a libuv handle leaked", sourceLocation: sourceLocation)
    }
}

/// The result of `ServerHandle.wait()`, handed over from a helper thread.
private final class WaitOutcome: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Bool?
    private let done = DispatchSemaphore(value: 0)

    func finish(_ clean: Bool) {
        lock.withLock { value = clean }
        done.signal()
    }

    func result(within seconds: Double) -> Bool? {
        guard done.wait(timeout: .now() + seconds) == .success else { return nil }
        return lock.withLock { value }
    }
}

/// Runs `body` against a fresh server with its own database; the server is
/// stopped (and checked for a clean loop close) whether `body` passes,
/// fails or throws.
func withTestServer<T>(
    _ configure: (inout ServerConfig) -> Void = { _ in },
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: (TestServer) throws -> T
) throws -> T {
    let folder = try TemporaryFolder()
    let server = try TestServer(databasePath: folder.path("outatime.sqlite"), configure: configure)
    defer {
        server.stop(sourceLocation: sourceLocation)
        withExtendedLifetime(folder) {}
    }
    return try body(server)
}

/// Every log line a server writes, kept in memory so tests can search it
/// (e.g. to prove a token never reaches the logs).
final class CapturedLogs: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []

    /// A logger at `level` whose output lands here.
    func logger(level: Logger.Level = .trace) -> Logger {
        var logger = Logger(label: "outatime.e2e.captured") { _ in CapturingHandler(sink: self) }
        logger.logLevel = level
        return logger
    }

    /// The lines so far: message, then metadata.
    var all: [String] { lock.withLock { lines } }

    fileprivate func append(_ line: String) {
        lock.withLock { lines.append(line) }
    }
}

/// A `LogHandler` that renders each event to one line in a ``CapturedLogs``.
private struct CapturingHandler: LogHandler {
    let sink: CapturedLogs
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        let fields = merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        sink.append("\(event.level) \(event.message) \(fields)")
    }
}
