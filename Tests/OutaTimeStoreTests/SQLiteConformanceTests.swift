import Foundation
import OutaTimeStore
import OutaTimeStoreConformance
import Testing

/// The store conformance suite against ``SQLiteStore``: every check on a
/// fresh temporary file, with the fold after every commit and with the
/// server's (events then wait in the unindexed tail, read as part of the
/// log), so that both ways a SQLite log is read pass.
@Suite(.timeLimit(.minutes(3))) struct SQLiteConformanceTests {
    @Test(arguments: DurableStoreConformance.checks, [1, 8_192])
    func sqliteConforms(_ check: ConformanceCheck, foldEvery: Int) throws {
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("outatime-conformance-\(UUID().uuidString)", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("outatime.sqlite").path
        try check.run(DurableStoreHarness { startsPaused, onCommit in
            try SQLiteStore(path: path, historyLimit: 1_000, foldEvery: foldEvery,
                            startsPaused: startsPaused, onCommit: onCommit)
        })
    }

    /// The lock is the SQLite backend's: a second instance on an open file
    /// is refused, and closing gives the lock up.
    @Test func aSecondInstanceOnAnOpenFileIsRefusedUntilClose() throws {
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("outatime-conformance-\(UUID().uuidString)", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("outatime.sqlite").path
        let first = try SQLiteStore(path: path, historyLimit: 1_000) { _ in }
        #expect(first.backendName == "sqlite")
        #expect(throws: DatabaseLockError.self) { try SQLiteStore(path: path, historyLimit: 1_000) { _ in } }
        first.close()
        let second = try SQLiteStore(path: path, historyLimit: 1_000) { _ in }
        second.close()
        #expect(throws: (any Error).self, "reads fail after close") { try second.loadChannels() }
    }
}
