import Foundation
import OutaTimeServer
import OutaTimeStore
import OutaTimeTestSupport
import Synchronization
import Testing

/// `ServerConfig.storage`: the server stores through the backend it is
/// given and through nothing else (no SQLite file of its own), opens it
/// with its settings, and closes it when it stops.
@Suite("storage backend", .timeLimit(.minutes(2)))
struct StorageBackendTests {
    @Test("a custom backend is the server's only storage, opened with its history limit and closed at stop")
    func customBackend() throws {
        let folder = try TemporaryFolder()
        let backendPath = folder.path("backend/custom.sqlite")
        let unusedPath = folder.path("unused/outatime.sqlite")
        let opened = Mutex<[CountingStore]>([])
        let configure = { (config: inout ServerConfig) in
            config.historyLimit = 1_234
            config.storage = .custom { opening in
                #expect(opening.historyLimit == 1_234)
                let store = try CountingStore(SQLiteStore(path: backendPath, historyLimit: opening.historyLimit,
                                                          onCommit: opening.onCommit))
                opened.withLock { $0.append(store) }
                return store
            }
        }

        let server = try TestServer(databasePath: unusedPath, configure: configure)
        do {
            defer { server.stop() }
            let client = try server.connectReady()
            for action in ["start", "lap", "lap"] {
                #expect(try client.request("command", ["channel": "laps/custom", "action": action]).isOK)
            }
            let stats = try client.call("stats")
            #expect(stats[int: "store_batches"].map { $0 > 0 } == true, "\(stats)")
        }
        let first = try #require(opened.withLock { $0.first })
        #expect(first.submissions > 0, "the server's writes went through the custom backend")
        #expect(first.closes == 1, "closed once when the server stopped")
        #expect(!FileManager.default.fileExists(atPath: unusedPath), "no SQLite file at databasePath")

        // A second server on the same backend's data finds the channel.
        let again = try TestServer(databasePath: unusedPath, configure: configure)
        defer { again.stop() }
        let reply = try again.connectReady().call("get", ["channel": "laps/custom"])
        #expect(reply[int: "seq"] == 3, "\(reply)")
        #expect(opened.withLock { $0.count } == 2)
    }

    @Test("a backend that cannot open fails the start with its error")
    func backendFailingToOpen() throws {
        let folder = try TemporaryFolder()
        do {
            _ = try TestServer(databasePath: folder.path("outatime.sqlite")) { config in
                config.storage = .custom { _ in throw BackendUnavailable() }
            }
            Issue.record("the server started without its store")
        } catch {
            #expect("\(error)".contains("no quorum for the channel stream"), "\(error)")
        }
    }
}

private struct BackendUnavailable: Error, CustomStringConvertible {
    var description: String { "no quorum for the channel stream" }
}

/// A SQLite store that counts what the server asks of it.
private final class CountingStore: DurableStore {
    private let inner: SQLiteStore
    private let counts = Mutex((submissions: 0, closes: 0))

    init(_ inner: SQLiteStore) { self.inner = inner }

    var submissions: Int { counts.withLock { $0.submissions } }
    var closes: Int { counts.withLock { $0.closes } }

    func submit(_ writes: [StoreWrite], ticket: UInt64) {
        counts.withLock { $0.submissions += 1 }
        inner.submit(writes, ticket: ticket)
    }

    func resume() { inner.resume() }

    func close() {
        counts.withLock { $0.closes += 1 }
        inner.close()
    }

    var backlog: Int { inner.backlog }
    var stats: WriterStats { inner.stats }
    var textBytesWritten: Int { inner.textBytesWritten }
    var backendName: String { "counting" }
    func loadChannels() throws(StoreFailure) -> [ChannelRecord] { try inner.loadChannels() }
    func channel(named name: String) throws(StoreFailure) -> ChannelRecord? { try inner.channel(named: name) }
    func history(channel: String, after: Int64, through: Int64, limit: Int) throws(StoreFailure) -> [EventRecord] {
        try inner.history(channel: channel, after: after, through: through, limit: limit)
    }
    func oldestRetainedSeq(channel: String) throws(StoreFailure) -> Int64? { try inner.oldestRetainedSeq(channel: channel) }
    func meta(_ key: String) throws(StoreFailure) -> String? { try inner.meta(key) }
}
