import Foundation
import OutaTimeProtocol
import OutaTimeServer
import OutaTimeStore
import OutaTimeTestSupport
import Synchronization
import Testing

/// `command` `idempotency_key` (protocol §6.9, issue 27): a repeat is
/// answered with the first outcome and applies nothing, on any connection,
/// while the first still commits, and after a restart.
@Suite("idempotency keys", .timeLimit(.minutes(3)))
struct IdempotencyTests {
    private static var add: [String: Any] { [
        "channel": "timers/retry", "action": "add",
        "args": ["event": "Lightning strikes the clock tower", "remaining_s": 3_600],
    ] }

    private static func keyed(_ key: String, _ fields: [String: Any] = add) -> [String: Any] {
        var fields = fields
        fields["idempotency_key"] = key
        return fields
    }

    /// The channel's timers and seq, read with `get`.
    private static func timers(_ client: TestClient) throws -> (seq: Int?, count: Int) {
        let result = try client.call("get", ["channel": "timers/retry"])
        return (result[int: "seq"], result[object: "state"]?[objects: "timers"]?.count ?? -1)
    }

    @Test("a repeat on another connection gets the same seq and result, and nothing is applied twice")
    func repeatAnswersFirstOutcome() throws {
        try withTestServer { server in
            let first = try server.connectReady()
            let watcher = try server.connectReady()
            try watcher.call("subscribe", ["channel": "timers/retry"])

            let key = "2f1c7a0e-93b1-4f0e-9a57-1b2c3d4e5f60"
            let reply = try first.request("command", Self.keyed(key))
            #expect(reply.isOK, "\(describe([reply]))")
            #expect(reply[int: "seq"] == 1, "a keyed reply carries its event's seq: \(describe([reply]))")
            #expect(reply["repeated"] == nil, "a first answer is not a repeat")

            let again = try server.connectReady()
            let repeated = try again.request("command", Self.keyed(key))
            #expect(repeated.isOK, "\(describe([repeated]))")
            #expect(repeated[int: "seq"] == 1)
            #expect(repeated["repeated"] as? Bool == true)
            #expect(jsonEqual(repeated["result"], reply["result"]), "\(describe([reply, repeated]))")

            // One timer, one event: the watcher saw exactly one.
            let state = try Self.timers(again)
            #expect(state.seq == 1 && state.count == 1, "\(state)")
            _ = try watcher.readUntil(type: "event")
            try watcher.call("ping")
            #expect(!watcher.pushes.contains { $0.type == "event" }, "a second event: \(describe(watcher.pushes))")

            // Unkeyed commands keep the plain reply.
            let plain = try first.request("command", Self.add)
            #expect(plain.isOK && plain["seq"] == nil && plain["repeated"] == nil, "\(describe([plain]))")
            #expect(try Self.timers(first).count == 2)
        }
    }

    @Test("a repeat while the first waits for its commit waits for it and gets the same answer")
    func repeatWhileCommitting() throws {
        let folder = try TemporaryFolder()
        let gatedPath = folder.path("gated.sqlite")
        let gate = Mutex<GatedStore?>(nil)
        let server = try TestServer(databasePath: folder.path("unused.sqlite")) { config in
            config.storage = .custom { opening in
                let store = GatedStore(try SQLiteStore(path: gatedPath, historyLimit: opening.historyLimit,
                                                       onCommit: opening.onCommit))
                gate.withLock { $0 = store }
                return store
            }
        }
        defer { server.stop() }
        let store = try #require(gate.withLock { $0 })
        let first = try server.connectReady()
        let second = try server.connectReady()
        try first.call("subscribe", ["channel": "timers/retry"])  // created and committed

        store.hold()
        var message = Self.keyed("held-1")
        message["type"] = "command"
        message["id"] = 500
        let observer = try server.connectReady()
        let before = try observer.call("stats")[int: "commands"] ?? 0
        try first.sendFrame(message)
        // The first is applied and waits for its commit before the repeat
        // is sent (the server counts each command it runs).
        try Self.awaitCommands(before + 1, observer)
        try second.sendFrame(message)
        try first.sendFrame(["type": "ping", "id": 501])
        try second.sendFrame(["type": "ping", "id": 501])
        try Self.awaitCommands(before + 2, observer)
        // Neither is answered while the commit is held (the repeat waits
        // for the first one's, it does not run again).
        #expect(store.heldCount == 1, "one submission held: the repeat applied nothing")
        #expect(throws: (any Error).self, "no reply while the commit is held") { try second.readReply(id: 500, timeout: 0.2) }
        store.release()

        let one = try first.readReply(id: 500)
        let two = try second.readReply(id: 500)
        #expect(one.isOK && two.isOK, "\(describe([one, two]))")
        #expect(one[int: "seq"] == 1 && two[int: "seq"] == 1, "\(describe([one, two]))")
        #expect(one["repeated"] == nil && two["repeated"] as? Bool == true)
        #expect(jsonEqual(one["result"], two["result"]))
        _ = try first.readReply(id: 501)
        _ = try second.readReply(id: 501)
        let events = first.pushes.filter { $0.type == "event" }
        #expect(events.count == 1, "exactly one event: \(describe(first.pushes))")
        let state = try Self.timers(second)
        #expect(state.seq == 1 && state.count == 1, "\(state)")
        let history = try second.call("history", ["channel": "timers/retry"])
        #expect(history[objects: "events"]?.count == 1, "\(history)")
    }

    /// Waits (bounded) until the server has run `count` commands in all.
    private static func awaitCommands(_ count: Int, _ observer: TestClient) throws {
        let deadline = Date().addingTimeInterval(10)
        while (try observer.call("stats")[int: "commands"] ?? 0) < count {
            guard Date() < deadline else { throw TestClientError.timedOut("\(count) commands run") }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    @Test("a repeat after a restart on the same database is still answered with the first outcome")
    func repeatAcrossRestart() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("outatime.sqlite")
        let firstReply: [String: Any]
        do {
            let server = try TestServer(databasePath: path)
            defer { server.stop() }
            let client = try server.connectReady()
            try client.call("command", ["channel": "timers/retry", "action": "add",
                                        "args": ["event": "Before", "remaining_s": 10]])
            firstReply = try client.request("command", Self.keyed("restart:1"))
            #expect(firstReply.isOK && firstReply[int: "seq"] == 2, "\(describe([firstReply]))")
        }
        let server = try TestServer(databasePath: path)
        defer { server.stop() }
        let client = try server.connectReady()
        let repeated = try client.request("command", Self.keyed("restart:1"))
        #expect(repeated.isOK, "\(describe([repeated]))")
        #expect(repeated[int: "seq"] == 2 && repeated["repeated"] as? Bool == true, "\(describe([repeated]))")
        #expect(jsonEqual(repeated["result"], firstReply["result"]), "\(describe([firstReply, repeated]))")
        let state = try Self.timers(client)
        #expect(state.seq == 2 && state.count == 2, "\(state)")
        // Another action under the same key is refused after the restart too.
        let other = try client.request("command", Self.keyed("restart:1", ["channel": "timers/retry", "action": "remove",
                                                                          "args": ["id": 1]]))
        #expect(other.errorCode == .conflict, "\(describe([other]))")
    }

    @Test("a key that is not 1…64 characters of A–Z a–z 0–9 . _ - : is invalid_request naming it", arguments: [
        "", String(repeating: "k", count: 65), "has space", "émoji", "semi;colon", "slash/",
    ])
    func badKey(key: String) throws {
        try withTestServer { server in
            let client = try server.connectReady()
            let reply = try client.request("command", Self.keyed(key))
            #expect(reply.errorCode == .invalidRequest, "\(describe([reply]))")
            let message = reply.errorMessage ?? ""
            #expect(message.contains("idempotency_key") && message.contains("A–Z a–z 0–9 . _ - :"), "\(message)")
            #expect(message.contains("'\(key.prefix(20))"), "names the value: \(message)")
            #expect(try client.request("get", ["channel": "timers/retry"]).isOK)
            #expect(try Self.timers(client).count == 0, "nothing applied")
        }
    }

    @Test("a non-string key is invalid_request; a 64-character key of every allowed kind is accepted")
    func keyShapes() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            let number = try client.request("command", Self.keyed("x").merging(["idempotency_key": 7]) { $1 })
            #expect(number.errorCode == .invalidRequest, "\(describe([number]))")
            let longest = "AZaz09._-:" + String(repeating: "q", count: 54)
            #expect(longest.count == 64)
            #expect(try client.request("command", Self.keyed(longest)).isOK)
        }
    }

    @Test("the same key with another action is conflict naming the key and the first action; nothing is applied")
    func otherAction() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            #expect(try client.request("command", Self.keyed("one-key")).isOK)
            let other = try client.request("command", Self.keyed("one-key", ["channel": "timers/retry", "action": "remove",
                                                                            "args": ["id": 1]]))
            #expect(other.errorCode == .conflict, "\(describe([other]))")
            let message = other.errorMessage ?? ""
            #expect(message.contains("one-key") && message.contains("'add'"), "\(message)")
            let state = try Self.timers(client)
            #expect(state.seq == 1 && state.count == 1, "\(state)")
        }
    }

    @Test("a keyed command that fails is not remembered: sent again, it runs again")
    func failureNotRemembered() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            let missing = try client.request("command", Self.keyed("fails-first", ["channel": "timers/retry", "action": "remove",
                                                                                  "args": ["id": 1]]))
            #expect(missing.errorCode == .notFound)
            try client.call("command", Self.add)
            let second = try client.request("command", Self.keyed("fails-first", ["channel": "timers/retry", "action": "remove",
                                                                                 "args": ["id": 1]]))
            #expect(second.isOK && second["repeated"] == nil, "\(describe([second]))")
            #expect(try Self.timers(client).count == 0)
        }
    }

    @Test("a timers start or stop is not remembered: viewing belongs to the connection, so a new one views again")
    func viewingNotRemembered() throws {
        try withTestServer { server in
            let first = try server.connectReady()
            try first.call("command", Self.add)
            try first.call("subscribe", ["channel": "timers/retry"])
            let start: [String: Any] = ["channel": "timers/retry", "action": "start", "args": ["id": 1],
                                        "idempotency_key": "view-1"]
            let viewing = try first.request("command", start)
            #expect(viewing.isOK && viewing["seq"] == nil, "\(describe([viewing]))")
            let second = try server.connectReady()
            try second.call("subscribe", ["channel": "timers/retry"])
            let again = try second.request("command", start)
            #expect(again.isOK && again["repeated"] == nil, "\(describe([again]))")
            #expect(again[object: "result"]?[int: "viewers"] == 2, "the second connection views too: \(describe([again]))")
        }
    }

    @Test("a key is forgotten once its event leaves the newest --history-limit: a later repeat runs again")
    func countBound() throws {
        try withTestServer { server in  // --history-limit 1000, the minimum
            let client = try server.connectReady()
            #expect(try client.request("command", Self.keyed("oldest"))[int: "seq"] == 1)
            // 999 more events: the key's event is still among the newest 1,000.
            let updates = (0..<999).map { index -> [String: Any] in
                ["type": "command", "id": 10_000 + index, "channel": "timers/retry", "action": "update",
                 "args": ["id": 1, "location": "stop \(index)"]]
            }
            try client.sendFrames(updates)
            for index in 0..<999 { #expect(try client.readReply(id: 10_000 + index).isOK) }
            #expect(try client.request("command", Self.keyed("oldest"))["repeated"] as? Bool == true)
            // One more: it is not, and the key is forgotten.
            try client.call("command", ["channel": "timers/retry", "action": "update", "args": ["id": 1, "location": "last"]])
            let late = try client.request("command", Self.keyed("oldest"))
            #expect(late.isOK && late["repeated"] == nil && late[int: "seq"] == 1_002, "\(describe([late]))")
        }
    }

    @Test("keys are forgotten after --idempotency-window-s: a later repeat runs again")
    func windowExpires() throws {
        try withTestServer({ $0.idempotencyWindowS = 1 }) { server in
            let client = try server.connectReady()
            #expect(try client.request("command", Self.keyed("short-lived")).isOK)
            #expect(try client.request("command", Self.keyed("short-lived"))["repeated"] as? Bool == true)
            Thread.sleep(forTimeInterval: 2.5)
            let late = try client.request("command", Self.keyed("short-lived"))
            #expect(late.isOK && late["repeated"] == nil && late[int: "seq"] == 2, "\(describe([late]))")
        }
    }
}

/// A SQLite backend whose submissions can be held (``hold()``) and let go
/// in order (``release()``): a commit that takes as long as a test needs.
private final class GatedStore: DurableStore {
    private let inner: SQLiteStore
    private let state = Mutex((holding: false, held: [(writes: [StoreWrite], ticket: UInt64)]()))

    init(_ inner: SQLiteStore) { self.inner = inner }

    func hold() { state.withLock { $0.holding = true } }

    var heldCount: Int { state.withLock { $0.held.count } }

    func release() {
        let held = state.withLock { state in
            state.holding = false
            defer { state.held = [] }
            return state.held
        }
        for submission in held { inner.submit(submission.writes, ticket: submission.ticket) }
    }

    func submit(_ writes: [StoreWrite], ticket: UInt64) {
        let kept = state.withLock { state in
            guard state.holding else { return false }
            state.held.append((writes, ticket))
            return true
        }
        if !kept { inner.submit(writes, ticket: ticket) }
    }

    func resume() { inner.resume() }
    func close() {
        release()
        inner.close()
    }
    var backlog: Int { inner.backlog + heldCount }
    var stats: WriterStats { inner.stats }
    var textBytesWritten: Int { inner.textBytesWritten }
    var backendName: String { "gated" }
    func loadChannels() throws(StoreFailure) -> [ChannelRecord] { try inner.loadChannels() }
    func channel(named name: String) throws(StoreFailure) -> ChannelRecord? { try inner.channel(named: name) }
    func history(channel: String, after: Int64, through: Int64, limit: Int) throws(StoreFailure) -> [EventRecord] {
        try inner.history(channel: channel, after: after, through: through, limit: limit)
    }
    func oldestRetainedSeq(channel: String) throws(StoreFailure) -> Int64? { try inner.oldestRetainedSeq(channel: channel) }
    func meta(_ key: String) throws(StoreFailure) -> String? { try inner.meta(key) }
    func commandKeys(channel: String, after: Int64) throws(StoreFailure) -> [StoredCommandKey] {
        try inner.commandKeys(channel: channel, after: after)
    }
    func allCommandKeys() throws(StoreFailure) -> [StoredCommandKey] { try inner.allCommandKeys() }
}

/// `protocol/vectors/idempotency.json` (PROTOCOL.md §14.5): the exchanges
/// of §6.9, replayed in order against a real server, restarted on the same
/// database where a step says `restart_before`.
@Suite("idempotency vectors", .timeLimit(.minutes(2)))
struct IdempotencyVectorTests {
    static func vectors() throws -> [[String: Any]] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let data = try Data(contentsOf: root.appendingPathComponent("protocol/vectors/idempotency.json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
    }

    /// `expected` matched against `actual`: objects by the expected keys,
    /// arrays element by element, anything else equal.
    static func matches(_ expected: Any?, _ actual: Any?) -> Bool {
        switch (expected, actual) {
        case (let expected as [String: Any], let actual as [String: Any]):
            return expected.allSatisfy { matches($0.value, actual[$0.key]) }
        case (let expected as [Any], let actual as [Any]):
            return expected.count == actual.count && zip(expected, actual).allSatisfy { matches($0, $1) }
        default:
            return jsonEqual(expected, actual)
        }
    }

    @Test("every step of the idempotency vectors gets its expected reply")
    func replay() throws {
        let steps = try Self.vectors()
        #expect(steps.count >= 8)
        let folder = try TemporaryFolder()
        let path = folder.path("vectors.sqlite")
        var server = try TestServer(databasePath: path)
        defer { server.stop() }
        var connections: [String: TestClient] = [:]
        for step in steps {
            let name = step["name"] as? String ?? "?"
            if step["restart_before"] as? Bool == true {
                connections = [:]
                server.stop()
                server = try TestServer(databasePath: path)
            }
            let label = step["connection"] as? String ?? "a"
            let client = try connections[label] ?? server.connectReady()
            connections[label] = client
            var send = try #require(step[object: "send"], "\(name)")
            let type = try #require(send.removeValue(forKey: "type") as? String)
            let reply = try client.request(type, send)
            let expect = try #require(step[object: "expect"], "\(name)")
            #expect(Self.matches(expect, reply), "\(name): \(describe([reply]))")
            for key in ["seq", "repeated"] {
                #expect((expect[key] == nil) == (reply[key] == nil), "\(name): '\(key)' \(describe([reply]))")
            }
        }
    }
}
