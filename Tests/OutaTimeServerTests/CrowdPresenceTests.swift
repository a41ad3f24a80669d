import OutaTimeTestSupport
import Foundation
import OutaTimeProtocol
import OutaTimeServer
import Testing

/// Crowded channels (more watchers than `presenceLimit`): presence is
/// gathered into one summary per interval and `subscribe` lists a bounded
/// number of watchers with the exact `watcher_count` (PROTOCOL.md
/// "Crowded channels"). Small limits make a crowd of five.
@Suite("crowded channel presence", .timeLimit(.minutes(3)))
struct CrowdPresenceTests {
    static let channel = "starport/crowd"

    static func crowd(_ config: inout ServerConfig) {
        config.presenceLimit = 3
        config.presenceIntervalMs = 50
    }

    @Test("joins past the limit arrive as one summary with counts; subscribe lists the limit, caller first")
    func summaryAfterLimit() throws {
        try withTestServer(Self.crowd) { server in
            var clients: [TestClient] = []
            for index in 0..<3 {
                let client = try server.connectReady(name: "w\(index)")
                let result = try client.call("subscribe", ["channel": Self.channel])
                #expect(result["watcher_count"] as? Int == index + 1)
                #expect(result.sessions("watchers").count == index + 1)
                clients.append(client)
            }
            // Three watchers: the third join went out at once.
            let immediate = try clients[0].readUntil(type: "presence")
            #expect(immediate["watcher_count"] as? Int == 2)

            let fourth = try server.connectReady(name: "w3")
            let fifth = try server.connectReady(name: "w4")
            try fourth.call("subscribe", ["channel": Self.channel])
            let result = try fifth.call("subscribe", ["channel": Self.channel])
            #expect(result["watcher_count"] as? Int == 5)
            let listed = result.sessions("watchers")
            #expect(listed.count == 3, "a crowd's subscribe lists presenceLimit watchers")
            #expect(listed.first == fifth.session, "the caller comes first")

            // The first watcher: w2's immediate join, then one summary with w3 and w4.
            var summary = try clients[0].readUntil(type: "presence")
            if summary.sessions("joined") == [clients[2].session ?? "?"] {
                summary = try clients[0].readUntil(type: "presence")
            }
            #expect(summary.sessions("joined") == [fourth.session, fifth.session].compactMap { $0 })
            #expect(summary.sessions("left").isEmpty)
            #expect(summary["watcher_count"] as? Int == 5)
            #expect(summary["joined_count"] == nil, "counts appear only when a list was cut")
        }
    }

    @Test("a summary cuts long lists and gives exact counts; join then leave in one interval cancels out")
    func cutListsAndNetChanges() throws {
        try withTestServer(Self.crowd) { server in
            let observer = try server.connectReady(name: "observer")
            try observer.call("subscribe", ["channel": Self.channel])
            var others: [TestClient] = []
            for index in 0..<3 {
                let client = try server.connectReady(name: "o\(index)")
                try client.call("subscribe", ["channel": Self.channel])
                others.append(client)
            }
            _ = try observer.readUntil(type: "presence")   // o0
            _ = try observer.readUntil(type: "presence")   // o1
            // o2 made four: gathered from here on. Add four more and remove one of them.
            var late: [TestClient] = []
            for index in 0..<4 {
                let client = try server.connectReady(name: "l\(index)")
                try client.call("subscribe", ["channel": Self.channel])
                late.append(client)
            }
            try late[3].call("unsubscribe", ["channel": Self.channel])

            let summary = try observer.readUntil(type: "presence")
            // Net joins: o2, l0, l1, l2 (l3 joined and left again) = 4, of which 3 listed.
            #expect(summary.sessions("joined").count == 3)
            #expect(summary["joined_count"] as? Int == 4)
            #expect(!summary.sessions("joined").contains(late[3].session ?? "?"))
            #expect(summary.sessions("left").isEmpty)
            #expect(summary["watcher_count"] as? Int == 7)
        }
    }

    @Test("a small channel still gets presence at once, with watcher_count")
    func smallChannelImmediate() throws {
        // A summary would take a minute: the push arriving at all shows it was immediate.
        try withTestServer({ config in
            config.presenceLimit = 3
            config.presenceIntervalMs = 60_000
        }) { server in
            let a = try server.connectReady(name: "a")
            try a.call("subscribe", ["channel": Self.channel])
            let b = try server.connectReady(name: "b")
            try b.call("subscribe", ["channel": Self.channel])
            let push = try a.readUntil(type: "presence")
            #expect(push.sessions("joined") == [b.session ?? "?"])
            #expect(push["watcher_count"] as? Int == 2)
        }
    }
}
