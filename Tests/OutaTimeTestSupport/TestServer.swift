import Foundation
import Logging
import OutaTimeServer
import Testing

/// A fresh folder under the temp directory, removed when released.
public final class TemporaryFolder {
    /// The folder.
    public let url: URL

    /// Creates a uniquely named folder.
    public init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("outatime-test-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// The path of `name` inside the folder.
    public func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// The real server, in process, on 127.0.0.1: the one helper every test
/// target uses to start it (shared so that no target keeps a copy).
public final class TestServer {
    /// How long `stop()` waits for the loop to exit before failing the test.
    public static let stopTimeout: Double = 20

    /// The running server.
    public let handle: ServerHandle
    /// The configuration it was started with.
    public let config: ServerConfig
    private var shutdownRequested = false
    private var stopped = false

    /// The bound port.
    public var port: Int { handle.port }
    /// The TLS listener's port (configured with `tlsPort`).
    public var tlsPort: Int { handle.tlsPort ?? 0 }

    /// The HTTP listener's port (configured with `http`).
    public var httpPort: Int { handle.httpPort ?? 0 }

    /// Starts a server on `databasePath` and `port` (0: any free port);
    /// `configure` adjusts the options. Without a `logger`, only critical
    /// messages are printed. A fixed port that is still taken (the previous
    /// server's socket closing) is retried for up to 2 s.
    public init(databasePath: String, port: Int = 0, logger: Logger? = nil,
                configure: (inout ServerConfig) -> Void = { _ in }) throws {
        var config = ServerConfig()
        config.host = "127.0.0.1"
        config.port = port
        config.databasePath = databasePath
        configure(&config)
        self.config = config
        var quiet = Logger(label: "outatime.tests")
        quiet.logLevel = .critical
        let deadline = Date().addingTimeInterval(2)
        while true {
            do {
                handle = try ServerHandle.start(config, logger: logger ?? quiet)
                return
            } catch where config.port != 0 && Date() < deadline && "\(error)".contains("EADDRINUSE") {
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
    }

    /// Asks the server to shut down (once) and returns at once.
    public func requestShutdown() {
        guard !shutdownRequested else { return }
        shutdownRequested = true
        handle.shutdown()
    }

    /// Shuts down and records an issue unless the loop closed cleanly (no
    /// leaked handle) within ``stopTimeout``. Safe to call more than once.
    public func stop(sourceLocation: SourceLocation = #_sourceLocation) {
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

    deinit { stop() }
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
public func withTestServer<T>(
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
