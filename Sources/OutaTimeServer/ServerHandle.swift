import Foundation
import Logging
import Synchronization
import UV

/// A running server on a thread of its own: for tests and for embedding.
/// Thread-safe; ``shutdown()`` and ``wait()`` may be called from anywhere.
public final class ServerHandle: Sendable {
    /// The bound port (the real one when configured with port 0).
    public let port: Int
    /// The bound host.
    public let host: String
    private let sender: InboxSender<ServerMessage>
    private let finished: Finished

    private init(host: String, port: Int, sender: InboxSender<ServerMessage>, finished: Finished) {
        self.host = host
        self.port = port
        self.sender = sender
        self.finished = finished
    }

    /// Starts the server on its own thread and returns once it is listening.
    /// Throws what startup threw (bad config, port in use, unreadable database).
    public static func start(_ config: ServerConfig, logger: Logger) throws -> ServerHandle {
        Signal.ignore(SIGPIPE)
        let started = Started()
        let finished = Finished()
        let thread = Thread {
            let server: Server
            let address: SocketAddress
            do {
                server = try Server(config: config, logger: logger)
                address = try server.start(handleSignals: false)
            } catch {
                started.set(.failure(StartupError(underlying: "\(error)")))
                return
            }
            started.set(.success((address, server.inbox.sender)))
            finished.set(server.runLoop())
        }
        thread.name = "outatime-loop"
        thread.start()
        switch started.wait() {
        case .success(let (address, sender)):
            return ServerHandle(host: address.host, port: address.port, sender: sender, finished: finished)
        case .failure(let error):
            throw error
        }
    }

    /// Asks the server to shut down gracefully (`bye server_shutdown` to every
    /// connection); returns at once. Idempotent.
    public func shutdown() {
        sender.post(.shutdownRequested)
    }

    /// Blocks until the server's loop has exited. Returns true when the loop
    /// closed cleanly (every libuv handle was closed: nothing leaked).
    @discardableResult
    public func wait() -> Bool {
        finished.wait()
    }
}

extension ServerHandle {
    /// Reloads what can be reloaded, as SIGHUP does for the executable
    /// (``ReloadReport``), and returns what was done once it is done.
    /// Returns nil when the server has stopped (or does not answer within
    /// `timeout` seconds).
    public func reload(timeout: Double = 30) -> ReloadReport? {
        let answer = ReloadAnswer()
        guard sender.post(.reloadRequested(answer)) else { return nil }
        return answer.wait(timeout: timeout)
    }
}

/// Why ``ServerHandle/start(_:logger:)`` failed.
public struct StartupError: Error, CustomStringConvertible, Sendable {
    /// The underlying error, as text.
    public let underlying: String
    public var description: String { underlying }
}

/// A one-shot value handed from the loop thread to a waiting thread.
private final class OneShot<Value: Sendable>: Sendable {
    private let state = Mutex<Value?>(nil)
    private let semaphore = DispatchSemaphore(value: 0)

    func set(_ value: Value) {
        state.withLock { $0 = value }
        semaphore.signal()
    }

    func wait() -> Value {
        if let value = state.withLock({ $0 }) { return value }
        semaphore.wait()
        semaphore.signal()  // later waiters pass too
        return state.withLock { $0! }
    }
}

private typealias Started = OneShot<Result<(SocketAddress, InboxSender<ServerMessage>), StartupError>>
private typealias Finished = OneShot<Bool>

extension Server {
    /// Runs a server on the calling thread until SIGINT/SIGTERM: the
    /// executable's entry point. `onListening` gets the bound address.
    /// Returns true when it stopped cleanly.
    static func runForeground(config: ServerConfig, logger: Logger, onListening: (SocketAddress) -> Void) throws -> Bool {
        Signal.ignore(SIGPIPE)
        Signal.unblock([SIGINT, SIGTERM, SIGHUP])
        let server = try Server(config: config, logger: logger)
        let address = try server.start(handleSignals: true)
        onListening(address)
        return server.runLoop()
    }
}

/// Runs the server in the foreground (see `outatime-server`).
public enum ServerRunner {
    /// Runs until SIGINT/SIGTERM; true when everything closed cleanly.
    public static func run(config: ServerConfig, logger: Logger, onListening: (String, Int) -> Void) throws -> Bool {
        try Server.runForeground(config: config, logger: logger) { onListening($0.host, $0.port) }
    }
}
