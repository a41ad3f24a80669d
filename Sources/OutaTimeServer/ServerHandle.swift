import Foundation
import Logging
import Synchronization
import UV

/// A running server on a thread of its own: for tests and for embedding.
/// Thread-safe; ``shutdown()`` and ``wait()`` may be called from anywhere.
public final class ServerHandle: Sendable {
    /// The plaintext listener's port (the real one when configured with
    /// port 0); 0 when there is no plaintext listener (`plainListener` false).
    public let port: Int
    /// The TLS listener's port, if there is one.
    public let tlsPort: Int?
    /// The HTTP listener's port (`http`), if there is one.
    public let httpPort: Int?
    /// The bound host.
    public let host: String
    private let sender: InboxSender<ServerMessage>
    private let finished: Finished

    private init(host: String, port: Int, tlsPort: Int?, httpPort: Int?, sender: InboxSender<ServerMessage>,
                 finished: Finished) {
        self.host = host
        self.port = port
        self.tlsPort = tlsPort
        self.httpPort = httpPort
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
            // Named from inside, at most 15 bytes: see StoreWriter.threadName.
            Thread.current.name = "outatime-loop"
            let server: Server
            let address: Server.Listening
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
        thread.start()
        switch started.wait() {
        case .success(let (address, sender)):
            return ServerHandle(host: (address.plain ?? address.tls)!.host, port: address.plain?.port ?? 0,
                                tlsPort: address.tls?.port, httpPort: address.http?.port, sender: sender,
                                finished: finished)
        case .failure(let error):
            throw error
        }
    }

    /// Asks the server to shut down gracefully (`bye server_shutdown` to every
    /// connection); returns at once. Idempotent.
    public func shutdown() {
        sender.post(.shutdownRequested)
    }

    /// Loads the TLS certificate, key and client CA again (from `files`, or
    /// the same paths when nil) for new connections; established ones keep
    /// theirs. On failure the server keeps its current certificate and the
    /// error says why. Blocks until the loop has done it.
    public func reloadTLS(_ files: TLSFiles? = nil) throws(ConfigError) {
        let reply = OneShot<Result<Void, TLSError>>()
        guard sender.post(.reloadTLS(files, reply)) else { throw ConfigError(message: "the server has stopped") }
        if case .failure(let error) = reply.wait() { throw ConfigError(message: error.message) }
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

extension ServerHandle {
    /// For tests: keeps the loop thread busy for `milliseconds`, as a burst
    /// of work would, and returns once it has. Ticks due meanwhile are built
    /// that much late, which makes tick lateness testable without hoping
    /// for a busy machine. Internal: nothing but a test should stall the
    /// loop. Returns false when the server has stopped. `started` is set
    /// once the loop is blocked (for a caller on another thread).
    func blockLoop(milliseconds: Int, started: OneShot<Void>? = nil) -> Bool {
        let done = OneShot<Void>()
        guard sender.post(.blockLoop(milliseconds: milliseconds, started: started, done)) else { return false }
        done.wait()
        return true
    }
}

extension ServerHandle {
    /// For tests: moves the server's time `milliseconds` forward
    /// (``ServerClock``: every timeout, window and clock of the server) and
    /// returns once the loop has acted on what fell due — a timeout test
    /// need not sleep through it. Internal: the seam is for tests, not a
    /// setting. Returns false when the server has stopped.
    @discardableResult
    func advanceClock(milliseconds: Int) -> Bool {
        let done = OneShot<Void>()
        guard sender.post(.advanceClock(milliseconds: UInt64(max(0, milliseconds)), done)) else { return false }
        done.wait()
        return true
    }
}

/// Why ``ServerHandle/start(_:logger:)`` failed.
public struct StartupError: Error, CustomStringConvertible, Sendable {
    /// The underlying error, as text.
    public let underlying: String
    public var description: String { underlying }
}

/// A one-shot value handed from the loop thread to a waiting thread.
final class OneShot<Value: Sendable>: Sendable {
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

private typealias Started = OneShot<Result<(Server.Listening, InboxSender<ServerMessage>), StartupError>>
private typealias Finished = OneShot<Bool>

extension Server {
    /// Runs a server on the calling thread until SIGINT/SIGTERM: the
    /// executable's entry point. `onListening` gets the bound address.
    /// Returns true when it stopped cleanly.
    static func runForeground(config: ServerConfig, logger: Logger, onListening: (Listening) -> Void) throws -> Bool {
        Signal.ignore(SIGPIPE)
        Signal.unblock([SIGINT, SIGTERM, SIGHUP])
        let server = try Server(config: config, logger: logger)
        server.serviceNotifier = openServiceNotifier(logger: logger)
        let address = try server.start(handleSignals: true)
        onListening(address)
        // Listening and the store open: systemd may start what depends on us.
        server.notifyService { try $0.ready(status: address.serviceStatus) }
        return server.runLoop()
    }
}

/// Runs the server in the foreground (see `outatime-server`).
public enum ServerRunner {
    /// What the executable does to its own process before it reads a key or
    /// makes a file: umask 077 (database, WAL and lock files for the owner
    /// only), no core dumps (`PR_SET_DUMPABLE` 0: a crash must not write
    /// keys and tokens to disk), and a warning when it runs as root.
    public static func hardenProcess(logger: Logger) {
        ProcessHardening.restrictNewFileModes()
        if !ProcessHardening.forbidCoreDumps() {
            logger.warning("cannot turn core dumps off (PR_SET_DUMPABLE); a crash may write keys and tokens to disk")
        }
        if ProcessHardening.runsAsRoot {
            logger.warning("""
                running as root: run the server as a user of its own (the systemd unit uses 'outatime'); \
                it needs no privileges, and a flaw would then hand over the whole machine
                """)
        }
    }

    /// Runs until SIGINT/SIGTERM; true when everything closed cleanly.
    /// `onListening` gets the plaintext listener's host and port, then
    /// `onTLSListening` the TLS listener's, then `onHTTPListening` the HTTP
    /// listener's (each only if it exists).
    public static func run(config: ServerConfig, logger: Logger, onListening: (String, Int) -> Void,
                           onTLSListening: (String, Int) -> Void = { _, _ in },
                           onHTTPListening: (String, Int) -> Void = { _, _ in }) throws -> Bool {
        try Server.runForeground(config: config, logger: logger) { bound in
            if let plain = bound.plain { onListening(plain.host, plain.port) }
            if let tls = bound.tls { onTLSListening(tls.host, tls.port) }
            if let http = bound.http { onHTTPListening(http.host, http.port) }
        }
    }
}
