import Foundation
import OutaTimeClient
import Testing
import UV

/// A libuv loop on the test's own thread for the connections under test.
/// Every wait is bounded by a watchdog timer; ``shutdown(sourceLocation:)``
/// closes every connection and proves with `Loop.close()` that no handle
/// leaked.
final class ClientLoop {
    let loop: Loop
    private let watchdog: UV.Timer
    private(set) var connections: [OutaTimeConnection] = []

    /// Seconds any single wait may take unless a test says otherwise.
    static let defaultTimeout: Double = 10

    init() throws {
        loop = try Loop()
        watchdog = UV.Timer(loop: loop)
    }

    /// A connection to 127.0.0.1:`port`, already connecting; closed by ``shutdown(sourceLocation:)``.
    func connect(port: Int, configure: (inout ClientOptions) -> Void = { _ in }) -> OutaTimeConnection {
        var options = ClientOptions(host: "127.0.0.1", port: port, name: "client-test")
        configure(&options)
        let connection = OutaTimeConnection(loop: loop, options: options)
        connections.append(connection)
        connection.connect()
        return connection
    }

    /// Runs the loop until `condition` holds or `timeout` seconds pass;
    /// true when the condition held.
    @discardableResult
    func run(timeout: Double = ClientLoop.defaultTimeout, until condition: () -> Bool) -> Bool {
        if condition() { return true }
        var expired = false
        watchdog.start(timeoutMs: UInt64(timeout * 1000)) { expired = true }
        defer { watchdog.stop() }
        while !expired {
            let alive = loop.runOnce()
            if condition() { return true }
            if !alive { return false }
        }
        return false
    }

    /// Runs the loop for `seconds`, whatever happens.
    func run(for seconds: Double) {
        run(timeout: seconds) { false }
    }

    /// Like ``run(timeout:until:)`` but records an issue naming `what` on timeout.
    func expect(_ what: String, timeout: Double = ClientLoop.defaultTimeout,
                sourceLocation: SourceLocation = #_sourceLocation, _ condition: () -> Bool) {
        if !run(timeout: timeout, until: condition) {
            Issue.record("timed out after \(timeout) s waiting for \(what)", sourceLocation: sourceLocation)
        }
    }

    /// Closes every connection and `extra` handle, lets the close callbacks
    /// run, and expects the loop to close (no leaked handle).
    func shutdown(closing extra: [Handle] = [], sourceLocation: SourceLocation = #_sourceLocation) {
        for connection in connections { connection.close() }
        for handle in extra { handle.close() }
        // Only the watchdog may remain once the close callbacks ran.
        let settled = run(timeout: 5) { loop.openHandleCount <= 1 }
        #expect(settled, "handles still open after close: \(loop.openHandleCount)", sourceLocation: sourceLocation)
        watchdog.close()
        if settled { loop.run() }
        #expect(throws: Never.self, "Loop.close() failed: a handle leaked", sourceLocation: sourceLocation) {
            try loop.close()
        }
    }
}

/// Runs `body` with a fresh ``ClientLoop`` that is shut down (and checked)
/// afterwards, also when `body` throws.
func withClientLoop<T>(sourceLocation: SourceLocation = #_sourceLocation, _ body: (ClientLoop) throws -> T) throws -> T {
    let clients = try ClientLoop()
    defer { clients.shutdown(sourceLocation: sourceLocation) }
    return try body(clients)
}
