import Foundation
import OutaTimeStore

/// A channel's snapshot in `OT_SNAP` (design §4.2): its state as of
/// `stateSeq`, and the stream sequence of the last event message it covers.
struct SnapshotRecord: Codable, Sendable, Equatable {
    /// The channel's seq when the snapshot was written.
    var seq: Int64
    /// The seq `state` is as of.
    var stateSeq: Int64
    /// The stream seq of the channel's last message when written (0: none):
    /// every message after it holds events after `stateSeq`.
    var streamSeq: UInt64
    /// The state, JSON text kept as a string.
    var state: String
    /// When it was written, ISO 8601 (the writer's clock).
    var at: String

    func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array((try? encoder.encode(self)) ?? Data())
    }

    static func decode(_ bytes: [UInt8], key: String) throws(StoreFailure) -> SnapshotRecord {
        do {
            return try JSONDecoder().decode(SnapshotRecord.self, from: Data(bytes))
        } catch {
            throw StoreFailure.database(code: 0, message: "snapshot '\(key)' in \(JetStreamStoreNames.snapshotBucket) is unreadable: \(error)")
        }
    }

    static func now() -> String { Date().formatted(.iso8601) }
}
