import Foundation
import NATS
import NATSTestSupport
import Testing

@Suite("NATS key-value")
struct KeyValueTests {
    @Test("create, keyExists, update by revision, stale revision, get, delete, keys")
    func operations() throws {
        let server = try NATSServerProcess.start()
        defer { server.stop() }
        let connection = try NATSConnection(NATSConnectionOptions(servers: [server.url]))
        defer { connection.close() }
        var config = KeyValueConfig(bucket: "OT_TEST")
        config.maxValueSize = 4096
        let bucket = try KeyValueBucket(try JetStream(connection, timeout: .seconds(2)), config: config)
        #expect(try bucket.get("laps.a") == nil)
        let created = try bucket.create("laps.a", value: Array("v1".utf8))
        #expect(throws: NATSError.keyExists(bucket: "OT_TEST", key: "laps.a")) {
            try bucket.create("laps.a", value: Array("again".utf8))
        }
        let updated = try bucket.update("laps.a", value: Array("v2".utf8), expectedRevision: created)
        #expect(updated > created)
        let stale = #expect(throws: NATSError.self) {
            try bucket.update("laps.a", value: Array("v3".utf8), expectedRevision: created)
        }
        guard case .wrongLastSequence = stale else { Issue.record("expected wrongLastSequence, got \(String(describing: stale))"); return }
        let entry = try #require(try bucket.get("laps.a"))
        #expect(entry.text == "v2")
        #expect(entry.revision == updated)
        #expect(entry.key == "laps.a")
        try bucket.put("timers.b", value: Array("b".utf8))
        #expect(try bucket.keys() == ["laps.a", "timers.b"])
        try bucket.delete("laps.a")
        #expect(try bucket.get("laps.a") == nil)
        #expect(try bucket.keys() == ["timers.b"])
        #expect(try bucket.create("laps.a", value: Array("reborn".utf8)) > updated)
        #expect(throws: NATSError.self) { try bucket.put("laps.big", value: [UInt8](repeating: 0, count: 8192)) }
        #expect(throws: NATSError.self) { try KeyValueBucket(try JetStream(connection), config: KeyValueConfig(bucket: "bad.name")) }
    }

    @Test("a watch reports current values, then caughtUp, then changes; stop ends it")
    func watch() throws {
        let server = try NATSServerProcess.start()
        defer { server.stop() }
        let connection = try NATSConnection(NATSConnectionOptions(servers: [server.url]))
        defer { connection.close() }
        let bucket = try KeyValueBucket(try JetStream(connection), config: KeyValueConfig(bucket: "OT_SLOTS"))
        try bucket.put("s000", value: Array("n1".utf8))
        let events = Collector<KeyValueWatchEvent>()
        let watch = try bucket.watch { events.add($0) }
        #expect(events.wait(for: 2).count == 2)
        try bucket.put("s001", value: Array("n2".utf8))
        try bucket.delete("s000")
        let seen = events.wait(for: 4)
        #expect(watch.stop())
        guard seen.count == 4, case .entry(let first) = seen[0], case .entry(let put) = seen[2], case .entry(let deleted) = seen[3] else {
            Issue.record("unexpected events \(seen)")
            return
        }
        #expect(first.key == "s000" && first.text == "n1" && first.operation == .put)
        #expect(seen[1] == .caughtUp)
        #expect(put.key == "s001" && put.text == "n2")
        #expect(deleted.key == "s000" && deleted.operation == .delete)
        try bucket.put("s002", value: [])
        try connection.flush()
        #expect(events.count == 4)
    }

    @Test("maxAge: the bucket keeps it (read back from its status), and a value older than it is gone; none by default")
    func maxAge() throws {
        let server = try NATSServerProcess.start()
        defer { server.stop() }
        let connection = try NATSConnection(NATSConnectionOptions(servers: [server.url]))
        defer { connection.close() }
        let api = try JetStream(connection, timeout: .seconds(2))
        #expect(try KeyValueBucket(api, config: KeyValueConfig(bucket: "OT_FOREVER")).maxAge() == nil)
        var config = KeyValueConfig(bucket: "OT_SHORT")
        config.maxAge = .milliseconds(500)
        let bucket = try KeyValueBucket(api, config: config)
        #expect(try bucket.maxAge() == .milliseconds(500))
        try bucket.put("node-a", value: Array("beat".utf8))
        #expect(try bucket.get("node-a")?.text == "beat")
        // The server expires it at its own pace: look until it is gone (bounded).
        let deadline = ContinuousClock.now + .seconds(15)
        while try bucket.get("node-a") != nil, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.1) }
        #expect(try bucket.get("node-a") == nil)
    }
}
