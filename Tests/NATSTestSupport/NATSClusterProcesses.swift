import Foundation
import NATS

/// Three real nats-servers joined by routes on loopback, with JetStream:
/// enough for R3 streams and buckets. Killed when released.
public final class NATSClusterProcesses: Sendable {
    /// The three servers, in start order.
    public let servers: [NATSServerProcess]

    /// The client URLs of all three, comma-separated (libnats' server list).
    public var urls: String { servers.map(\.url).joined(separator: ",") }

    /// Starts three servers and waits (bounded) until JetStream can place an
    /// R3 stream, that is until the meta leader is elected and all peers are known.
    public init(timeout: Duration = .seconds(30)) throws {
        let clusterPorts = try (0..<3).map { _ in try NATSServerProcess.freePort() }
        var started: [NATSServerProcess] = []
        for index in 0..<3 {
            started.append(try NATSServerProcess(
                name: "ot-n\(index + 1)", clusterPort: clusterPorts[index],
                routes: clusterPorts.enumerated().filter { $0.offset != index }.map(\.element)))
        }
        servers = started
        for server in servers { try server.waitUntilReady(timeout: timeout) }
        try waitForJetStream(timeout: timeout)
    }

    private func waitForJetStream(timeout: Duration) throws {
        let deadline = ContinuousClock.now + timeout
        let connection = try NATSConnection(NATSConnectionOptions(urls: urls, name: "ot-test-cluster-ready"))
        defer { connection.close() }
        let jetStream = try JetStream(connection, timeout: .seconds(2))
        var config = StreamConfig(name: "OT_READY", subjects: ["ot.ready"])
        config.replicas = 3
        config.storage = .memory
        var lastError: NATSError?
        while ContinuousClock.now < deadline {
            do throws(NATSError) {
                try jetStream.ensureStream(config)
                try jetStream.deleteStream(config.name)
                return
            } catch {
                lastError = error
                Thread.sleep(forTimeInterval: 0.1)  // the meta leader's election has no event to wait on
            }
        }
        throw NATSServerProcessError.notReady(
            url: urls, log: "JetStream never placed an R3 stream: \(lastError.map { "\($0)" } ?? "no attempt")\n" + servers[0].logTail)
    }

    /// Stops all three servers.
    public func stop() { servers.forEach { $0.stop() } }

    deinit { stop() }
}
