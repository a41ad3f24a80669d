import NATSTestSupport
import OutaTimeCluster
import OutaTimeStore
import OutaTimeStoreConformance
import Testing

/// The store conformance suite (the same checks ``SQLiteStore`` passes)
/// against ``JetStreamStore`` on a real nats-server: every check on a
/// server of its own with an empty JetStream store folder, so that every
/// instance the harness opens finds the data the previous one left.
@Suite("JetStreamStore conformance", .timeLimit(.minutes(3))) struct JetStreamConformanceTests {
    @Test(arguments: DurableStoreConformance.checks, [1, 3])
    func jetStreamConforms(_ check: ConformanceCheck, partitions: Int) throws {
        let server = try NATSServerProcess.start()
        defer { server.stop() }
        let url = server.url
        try check.run(DurableStoreHarness(atomicSubmissions: false) { startsPaused, onCommit in
            try JetStreamStore(servers: url, historyLimit: 1_000, partitions: partitions,
                               startsPaused: startsPaused, onCommit: onCommit)
        })
    }
}
