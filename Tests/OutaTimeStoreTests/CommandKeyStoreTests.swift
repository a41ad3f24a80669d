import Foundation
import Testing
@testable import OutaTimeStore

/// Keyed commands stored with their events (protocol §6.9): written in the
/// same transaction, read back per channel and all at once, kept exactly as
/// long as their events.
@Suite struct CommandKeyStoreTests {
    private static func keyed(_ channel: String, _ seq: Int64, key: String?) -> StoreWrite {
        .appendEvents(channel: channel, seq: seq, state: nil, events: [
            EventRecord(channel: channel, seq: seq, event: "timer_added", data: "{}", at: "2026-11-22T08:00:00Z",
                        command: key.map { CommandKeyRecord(key: $0, action: "add", result: #"{"id":\#(seq)}"#) }),
        ])
    }

    @Test("keys are stored with their events and read back after a reopen; unkeyed events store none")
    func storedAndReadBack() throws {
        let temp = try TemporaryStore()
        try temp.store.apply([.createChannel(.fresh("timers/a")), .createChannel(.fresh("timers/b"))])
        try temp.store.apply([Self.keyed("timers/a", 1, key: "k1"), Self.keyed("timers/a", 2, key: nil),
                              Self.keyed("timers/b", 1, key: "k1")])
        try temp.store.apply([Self.keyed("timers/a", 3, key: "k3")])
        let store = try temp.reopen()
        let a = try store.commandKeys(channel: "timers/a", after: 0)
        #expect(a.map(\.seq) == [1, 3])
        #expect(a.map(\.command.key) == ["k1", "k3"])
        #expect(a.first?.command == CommandKeyRecord(key: "k1", action: "add", result: #"{"id":1}"#))
        #expect(a.first?.at == "2026-11-22T08:00:00Z")
        #expect(try store.commandKeys(channel: "timers/a", after: 1).map(\.seq) == [3])
        #expect(try store.allCommandKeys().map { "\($0.channel)@\($0.seq)" } == ["timers/a@1", "timers/a@3", "timers/b@1"])
    }

    @Test("a failed write stores no key")
    func failedWrite() throws {
        let temp = try TemporaryStore()
        try temp.store.apply([.createChannel(.fresh("timers/a"))])
        #expect(throws: StoreError.self) { try temp.store.apply([Self.keyed("timers/a", 2, key: "gap")]) }
        #expect(try temp.store.commandKeys(channel: "timers/a", after: 0).isEmpty)
    }

    @Test("pruning the events prunes their keys")
    func prunedWithTheEvents() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        try store.apply([.createChannel(.fresh("timers/a"))])
        for seq in Int64(1)...8 {
            try store.apply([.appendEvents(channel: "timers/a", seq: seq, state: "{}", events: [
                EventRecord(channel: "timers/a", seq: seq, event: "timer_added", data: "{}", at: "2026-11-22T08:00:00Z",
                            command: CommandKeyRecord(key: "k\(seq)", action: "add", result: nil)),
            ])], historyLimit: 3)
        }
        #expect(try store.history(channel: "timers/a", after: 0, limit: 100).map(\.seq) == [6, 7, 8])
        #expect(try store.commandKeys(channel: "timers/a", after: 0).map(\.seq) == [6, 7, 8])
        #expect(try store.commandKeys(channel: "timers/a", after: 0).first?.command.result == nil)
    }
}
