import OutaTimeTestSupport
import Foundation
import OutaTimeProtocol
import Testing

/// The read-only queries: list, stats and history.
@Suite("queries", .timeLimit(.minutes(3)))
struct QueryTests {
    @Test("list shows every channel sorted by name, with kind, seq and watcher count")
    func list() throws {
        try withTestServer { server in
            let a = try server.connectReady()
            let b = try server.connectReady()
            try a.call("subscribe", ["channel": "timers/b"])
            try b.call("subscribe", ["channel": "timers/b"])
            try a.call("subscribe", ["channel": "delorean/a"])
            try a.call("get", ["channel": "laps/c"])

            let channels = try #require(try a.call("list")[objects: "channels"])
            #expect(channels.map { $0["channel"] as? String } == ["delorean/a", "laps/c", "timers/b"])
            #expect(channels.map { $0["kind"] as? String } == ["delorean", "laps", "timers"])
            #expect(channels.map { $0[int: "seq"] } == [0, 0, 0])
            #expect(channels.map { $0[int: "watchers"] } == [1, 0, 2])
        }
    }

    @Test("list filters by kind")
    func listByKind() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            for channel in ["timers/x", "timers/y", "delorean/z", "starport/w"] {
                try client.call("get", ["channel": channel])
            }
            let timers = try client.call("list", ["kind": "timers"])[objects: "channels"] ?? []
            #expect(timers.map { $0["channel"] as? String } == ["timers/x", "timers/y"])
            let laps = try client.call("list", ["kind": "laps"])[objects: "channels"]
            #expect(laps?.isEmpty == true)
            #expect(try client.request("list", ["kind": 3]).errorCode == .invalidRequest)
        }
    }

    @Test("stats reports connections, channels, subscriptions, frames, bytes and uptime")
    func stats() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            let other = try server.connectReady()
            try client.call("subscribe", ["channel": "delorean/s1"])
            try other.call("subscribe", ["channel": "delorean/s1"])
            try client.call("subscribe", ["channel": "timers/s2"])

            let stats = try client.call("stats")
            for key in ["connections", "channels", "subscriptions", "frames_in", "frames_out",
                        "bytes_in", "bytes_out", "uptime_s"] {
                #expect(stats[key] is NSNumber, "stats lacks numeric \(key): \(describe([stats]))")
            }
            #expect((stats[int: "connections"] ?? 0) >= 2)
            #expect(stats[int: "channels"] == 2)
            #expect(stats[int: "subscriptions"] == 3)
            // This connection alone sent hello, 2 subscribes and stats.
            #expect((stats[int: "frames_in"] ?? 0) >= 4)
            #expect((stats[int: "frames_out"] ?? 0) >= 3)
            #expect((stats[int: "bytes_in"] ?? 0) > (stats[int: "frames_in"] ?? 0) * 4)
            #expect((stats[int: "bytes_out"] ?? 0) > 0)
            #expect((stats[int: "uptime_s"] ?? -1) >= 0)

            let later = try client.call("stats")
            #expect((later[int: "frames_in"] ?? 0) > (stats[int: "frames_in"] ?? 0))
            #expect((later[int: "bytes_out"] ?? 0) > (stats[int: "bytes_out"] ?? 0))
        }
    }

    @Test("stats counts a closed connection out")
    func statsAfterDisconnect() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            var gone: TestClient? = try server.connectReady()
            try gone?.call("subscribe", ["channel": "laps/gone"])
            let before = try client.call("stats")
            gone?.closeAbruptly()
            gone = nil
            // Bounded polling: the server sees the reset asynchronously.
            var after = before
            let expectedConnections = (before[int: "connections"] ?? 0) - 1
            for _ in 0..<100 where after[int: "subscriptions"] != 0 || after[int: "connections"] != expectedConnections {
                usleep(20_000)
                after = try client.call("stats")
            }
            #expect(after[int: "subscriptions"] == 0)
            #expect(after[int: "connections"] == expectedConnections)
        }
    }

    @Test("history of a channel without events is seq 0 and events []")
    func historyEmpty() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            try client.call("subscribe", ["channel": "delorean/h"])
            let result = try client.call("history", ["channel": "delorean/h"])
            #expect(result["channel"] as? String == "delorean/h")
            #expect(result[int: "seq"] == 0)
            #expect((result["events"] as? [Any])?.isEmpty == true, "events: \(describe([result]))")
            let limited = try client.call("history", ["channel": "delorean/h", "after": 0, "limit": 1000])
            #expect((limited["events"] as? [Any])?.isEmpty == true)
        }
    }

    @Test("history does not create the channel")
    func historyUnknownChannel() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            let result = try client.call("history", ["channel": "timers/ghost"])
            #expect(result[int: "seq"] == 0)
            #expect((result["events"] as? [Any])?.isEmpty == true)
            #expect((try client.call("list")[objects: "channels"])?.isEmpty == true)
        }
    }

    @Test("history limit outside 1…1000, a non-integer limit or a negative after is invalid_request", arguments: [
        #"{"limit":0}"#, #"{"limit":5000}"#, #"{"limit":1001}"#, #"{"limit":-1}"#, #"{"limit":"10"}"#,
        #"{"after":-1}"#,
    ])
    func historyBadArguments(arguments: String) throws {
        try withTestServer { server in
            let client = try server.connectReady()
            var fields = try #require(try JSONSerialization.jsonObject(with: Data(arguments.utf8)) as? [String: Any])
            fields["channel"] = "laps/h"
            let reply = try client.request("history", fields)
            #expect(reply.errorCode == .invalidRequest, "\(arguments): \(describe([reply]))")
            #expect(reply.errorMessage?.isEmpty == false)
        }
    }
}
