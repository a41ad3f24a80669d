import Foundation
import OutaTimeStore
import Testing

/// The store boundary throws one type: ``DurableStore``'s reads throw
/// ``StoreFailure`` (typed throws), so the server handles a failed read
/// like a failed write, without casting. SQLite's errors keep their result
/// code and message through the mapping.
@Suite struct StoreFailureTests {
    @Test("a read of a closed SQLite store throws StoreFailure.database with SQLite's code and message")
    func readAfterCloseIsTyped() throws {
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("outatime-failure-\(UUID().uuidString)", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let store: any DurableStore = try SQLiteStore(path: folder.appendingPathComponent("outatime.sqlite").path,
                                                      historyLimit: 1_000) { _ in }
        store.close()
        do {
            _ = try store.loadChannels()
            Issue.record("a closed store read its channels")
        } catch {
            let failure: StoreFailure = error  // typed: no cast at the boundary
            guard case .database(let code, let message) = failure else {
                Issue.record("not a database failure: \(failure)")
                return
            }
            #expect(code == 21, "SQLITE_MISUSE expected: \(failure)")
            #expect(!message.isEmpty && failure.description == message)
        }
    }

    @Test("mapping keeps a StoreFailure as it is and classifies anything else")
    func mapping() {
        #expect(throws: StoreFailure.writerClosed) { try StoreFailure.mapping { throw StoreFailure.writerClosed } }
        struct Other: Error, CustomStringConvertible { var description: String { "disk on fire" } }
        #expect(throws: StoreFailure.database(code: 0, message: "disk on fire")) {
            try StoreFailure.mapping { throw Other() }
        }
    }
}
