import OutaTimeTestSupport
import Foundation
import OutaTimeProtocol
import Testing

/// seq, ordering, `history` paging and `since` recovery with real actions
/// (PROTOCOL.md §5, §8, §9).
@Suite("sequence and recovery", .timeLimit(.minutes(3)))
struct SequenceTests {
    static let channel = "timers/seq"

    /// The fields an `event` push shares with a `history` entry.
    static func entry(_ frame: [String: Any]) -> [String: Any] {
        var entry: [String: Any] = [:]
        for key in ["seq", "event", "data", "at"] { entry[key] = frame[key] ?? NSNull() }
        return entry
    }

    /// Whether two lists of events (pushes or history entries) are the same.
    static func same(_ a: [[String: Any]], _ b: [[String: Any]]) -> Bool {
        jsonEqual(a.map(entry), b.map(entry))
    }

    /// Two subscribed clients that add six timers, taking turns; returns
    /// them, the channel's seq before, and the event pushes each one saw.
    static func sixEvents(_ server: TestServer) throws
        -> (a: TestClient, b: TestClient, seq0: Int, seenByA: [[String: Any]], seenByB: [[String: Any]]) {
        let a = try server.connectReady(name: "Marty")
        let b = try server.connectReady(name: "Doc")
        let seq0 = try #require(try a.subscribe(channel)[int: "seq"])
        try b.subscribe(channel)
        for index in 0..<6 {
            try (index.isMultiple(of: 2) ? a : b).perform(channel, "add", ["event": "event \(index)", "remaining_s": 60 + index])
        }
        func events(_ client: TestClient) throws -> [[String: Any]] {
            try (0..<6).map { _ in
                try client.awaitFrame("an event on \(channel)") { $0.type == "event" && $0.channel == channel }
            }
        }
        return (a, b, seq0, try events(a), try events(b))
    }

    @Test("a subscribed issuer's event arrives before its reply")
    func eventBeforeReply() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            let seq0 = try #require(try client.subscribe(Self.channel)[int: "seq"])
            try client.sendFrame(["type": "command", "id": 77, "channel": Self.channel, "action": "add",
                                  "args": ["event": "Clock tower", "remaining_s": 10]])
            let frames = try client.collect(until: "the reply to 77") { $0.type == "reply" && $0[int: "id"] == 77 }
            #expect(frames.last?.isOK == true, "\(describe(frames))")
            let events = frames.filter { $0.isEvent("timer_added", on: Self.channel) }
            #expect(events.count == 1, "the event must precede the reply: \(describe(frames))")
            #expect(events.first?[int: "seq"] == seq0 + 1)
        }
    }

    @Test("seq rises by exactly 1 per event across two clients' commands; both see the same events")
    func seqAcrossClients() throws {
        try withTestServer { server in
            let (a, _, seq0, seenByA, seenByB) = try Self.sixEvents(server)
            #expect(seenByA.map { $0[int: "seq"] ?? -1 } == Array((seq0 + 1)...(seq0 + 6)), "\(describe(seenByA))")
            #expect(seenByA.allSatisfy { $0.eventName == "timer_added" })
            #expect(seenByA.map { $0.data?[object: "timer"]?["event"] as? String ?? "?" } == (0..<6).map { "event \($0)" })
            #expect(Self.same(seenByA, seenByB), "A: \(describe(seenByA))\nB: \(describe(seenByB))")
            #expect(seenByA.allSatisfy { ISOTime.parse($0["at"] as? String ?? "") != nil }, "at is an ISO time")
            #expect(try a.call("get", ["channel": Self.channel])[int: "seq"] == seq0 + 6)
        }
    }

    @Test("history pages through exactly the events that were pushed")
    func historyPages() throws {
        try withTestServer { server in
            let (a, _, seq0, events, _) = try Self.sixEvents(server)
            let pages = [(seq0, 2, 0..<2), (seq0 + 2, 2, 2..<4), (seq0 + 4, 100, 4..<6), (seq0 + 6, 100, 6..<6)]
            for (after, limit, range) in pages {
                let result = try a.call("history", ["channel": Self.channel, "after": after, "limit": limit])
                #expect(result[int: "seq"] == seq0 + 6)
                let page = result[objects: "events"] ?? []
                #expect(Self.same(page, Array(events[range])), "after \(after) limit \(limit): \(describe(page))")
            }
            #expect(Self.same(try a.history(Self.channel, after: seq0 + 3, limit: 1), [events[3]]))
            let all = try a.call("history", ["channel": Self.channel])[objects: "events"] ?? []
            #expect(Self.same(all, events), "history with defaults: \(describe(all))")
        }
    }

    @Test("subscribe since: missed events in order, none when current, a state when ahead")
    func sinceRecovery() throws {
        try withTestServer { server in
            let (a, _, seq0, events, _) = try Self.sixEvents(server)
            let late = try server.connectReady(name: "Jennifer")

            let missed = try late.subscribe(Self.channel, since: seq0 + 2)
            #expect(missed["recovered"] as? Bool == true, "\(describe([missed]))")
            #expect(missed["state"] == nil, "a recovery carries events, not a state")
            #expect(missed[int: "seq"] == seq0 + 6)
            #expect(Self.same(missed[objects: "events"] ?? [], Array(events[2...])), "\(describe([missed]))")

            let everything = try late.subscribe(Self.channel, since: seq0)
            #expect(everything["recovered"] as? Bool == true)
            #expect(Self.same(everything[objects: "events"] ?? [], events))

            let current = try late.subscribe(Self.channel, since: seq0 + 6)
            #expect(current["recovered"] as? Bool == true, "\(describe([current]))")
            #expect((current["events"] as? [Any])?.isEmpty == true, "\(describe([current]))")

            let ahead = try late.subscribe(Self.channel, since: seq0 + 7)
            #expect(ahead["recovered"] as? Bool == false, "\(describe([ahead]))")
            #expect(ahead["events"] == nil)
            #expect(ahead[object: "state"]?[objects: "timers"]?.count == 6, "\(describe([ahead]))")

            // Subscribed either way: the next event continues at seq + 1.
            try a.perform(Self.channel, "add", ["event": "event 6", "remaining_s": 1])
            let next = try late.awaitEvent("timer_added", on: Self.channel)
            #expect(next[int: "seq"] == seq0 + 7)
        }
    }

    @Test("beyond the history limit: history starts after the pruned events, since behind them gives a state")
    func prunedHistory() throws {
        try withTestServer { server in  // --history-limit 1000, the minimum
            let channel = "delorean/pruned"
            let clients = try (0..<4).map { _ in try server.connectReady() }
            try clients[0].call("get", ["channel": channel])
            let perClient = 251
            let total = perClient * clients.count
            // Pipelined on four connections, so that commits can group.
            for (n, client) in clients.enumerated() {
                for i in 0..<perClient {
                    let day = Date(timeIntervalSince1970: Double(n * perClient + i) * 86_400)
                    try client.sendFrame(["type": "command", "id": 1_000 + i, "channel": channel,
                                          "action": "set_destination", "args": ["time": ISOTime.format(day)]])
                }
            }
            var failed: [String] = []
            for client in clients {
                for i in 0..<perClient {
                    let reply = try client.readReply(id: 1_000 + i, timeout: 30)
                    if !reply.isOK { failed.append(describe([reply])) }
                }
            }
            #expect(failed.isEmpty, "\(failed.count) failed: \(failed.prefix(3))")
            #expect(try clients[0].call("get", ["channel": channel])[int: "seq"] == total)

            let history = try clients[0].history(channel, after: 0, limit: 1000)
            #expect(history.count == 1000)
            #expect(history.first?[int: "seq"] == total - 999, "the oldest retained event")
            #expect(history.last?[int: "seq"] == total)

            let late = try server.connectReady()
            let edge = try late.subscribe(channel, since: total - 1000)
            #expect(edge["recovered"] as? Bool == true, "every event after \(total - 1000) is retained")
            let recovered = edge[objects: "events"] ?? []
            #expect(recovered.count == 1000 && recovered.first?[int: "seq"] == total - 999)
            for since in [total - 1001, 1, 0] {
                let behind = try late.subscribe(channel, since: since)
                #expect(behind["recovered"] as? Bool == false, "since \(since): \(describe([behind]))")
                #expect(behind[object: "state"]?["status"] as? String == "parked")
                #expect(behind["events"] == nil)
            }
        }
    }

    @Test("events of different channels number independently")
    func seqPerChannel() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            for channel in ["laps/one", "laps/two"] { try client.subscribe(channel) }
            try client.perform("laps/one", "start")
            try client.perform("laps/two", "start")
            try client.perform("laps/one", "stop")
            #expect(try client.call("get", ["channel": "laps/one"])[int: "seq"] == 2)
            #expect(try client.call("get", ["channel": "laps/two"])[int: "seq"] == 1)
            let one = try client.history("laps/one")
            #expect(one.map { $0["event"] as? String ?? "?" } == ["started", "stopped"], "\(describe(one))")
        }
    }
}
