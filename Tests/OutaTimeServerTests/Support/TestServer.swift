import Foundation
import Logging
import OutaTimeTestSupport

extension TestServer {
    /// A new raw connection, before `hello`.
    func connect() throws -> TestClient { try TestClient(port: port) }

    /// A new connection that has completed `hello`.
    func connectReady(name: String? = "tester", token: String? = nil) throws -> TestClient {
        let client = try connect()
        try client.hello(name: name, token: token)
        return client
    }
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
