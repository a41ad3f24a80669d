import OutaTimeTestSupport
import Foundation
import OutaTimeProtocol
import Testing

/// Channel names, subscribe/unsubscribe and get.
@Suite("channels", .timeLimit(.minutes(3)))
struct ChannelTests {
    @Test("a malformed channel name is invalid_channel for every channel op", arguments: [
        "nope", "delorean/", "delorean/a b", "delorean/\(String(repeating: "a", count: 65))",
        "delorean/é", "delorean/a/b", "",
    ])
    func invalidChannel(name: String) throws {
        try withTestServer { server in
            let client = try server.connectReady()
            for op in ["subscribe", "get", "unsubscribe", "history", "publish"] {
                let reply = try client.request(op, ["channel": name, "data": 1])
                #expect(reply.errorCode == .invalidChannel, "\(op) '\(name)': \(describe([reply]))")
            }
        }
    }

    @Test("an unknown kind is unknown_kind")
    func unknownKind() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            for op in ["subscribe", "get", "history", "publish"] {
                let reply = try client.request(op, ["channel": "foo/bar", "data": 1])
                #expect(reply.errorCode == .unknownKind, "\(op): \(describe([reply]))")
            }
            #expect(try client.request("list", ["kind": "foo"]).errorCode == .unknownKind)
        }
    }

    @Test("a missing or non-string channel is invalid_request")
    func missingChannel() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            #expect(try client.request("subscribe").errorCode == .invalidRequest)
            #expect(try client.request("get", ["channel": 7]).errorCode == .invalidRequest)
        }
    }

    @Test("a 64-character channel name is valid")
    func longestName() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            let name = "timers/" + String(repeating: "Az09._-", count: 9) + "x"
            #expect(name.count - "timers/".count == 64)
            #expect(try client.call("subscribe", ["channel": name])["channel"] as? String == name)
        }
    }

    @Test("subscribe creates the channel with its kind's initial state", arguments: [
        ("starport/board", #"{"dispatches":[]}"#),
        ("timers/kitchen", #"{"timers":[]}"#),
        ("laps/morning", #"{"status":"idle","lap_number":0,"lap_elapsed_ms":0,"total_elapsed_ms":0,"laps":[],"average_lap_ms":null,"best_lap_ms":null,"worst_lap_ms":null,"running_since":null}"#),
    ])
    func subscribeCreates(channel: String, state: String) throws {
        try withTestServer { server in
            let client = try server.connectReady(name: "Marty")
            let result = try client.call("subscribe", ["channel": channel])
            #expect(result["channel"] as? String == channel)
            #expect(result["kind"] as? String == String(channel.prefix { $0 != "/" }))
            #expect(result[int: "seq"] == 0)
            let expected = try JSONSerialization.jsonObject(with: Data(state.utf8))
            #expect(jsonEqual(result["state"], expected), "state: \(describe([result]))")
            let watchers = try #require(result[objects: "watchers"])
            #expect(watchers.count == 1)
            #expect(watchers.first?["session"] as? String == client.session)
            #expect(watchers.first?["name"] as? String == "Marty")
        }
    }

    @Test("a new delorean is parked at 0 mph with no destination")
    func deloreanInitialState() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            let result = try client.call("subscribe", ["channel": "delorean/doc"])
            #expect(result["kind"] as? String == "delorean")
            let state = try #require(result[object: "state"])
            #expect(state[int: "speed_mph"] == 0)
            #expect(state["status"] as? String == "parked")
            #expect(state["destination_time"] is NSNull)
            #expect(state["last_departed"] is NSNull)
            let present = try #require(state["present_time"] as? String)
            #expect(ISO8601DateFormatter().date(from: present) != nil, "present_time \(present)")
        }
    }

    @Test("subscribing twice is idempotent: a fresh snapshot, still one watcher")
    func subscribeTwice() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            let first = try client.call("subscribe", ["channel": "delorean/twice"])
            let second = try client.call("subscribe", ["channel": "delorean/twice"])
            #expect(second[int: "seq"] == 0)
            #expect(jsonEqual(first["state"], second["state"]))
            #expect(second.sessions("watchers") == [client.session ?? ""])
            let stats = try client.call("stats")
            #expect(stats[int: "subscriptions"] == 1)
            #expect(client.pushes.isEmpty, "no presence for oneself: \(describe(client.pushes))")
        }
    }

    @Test("get returns channel, kind, seq and state, and creates the channel")
    func get() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            let result = try client.call("get", ["channel": "starport/gate"])
            #expect(result["channel"] as? String == "starport/gate")
            #expect(result["kind"] as? String == "starport")
            #expect(result[int: "seq"] == 0)
            #expect(jsonEqual(result["state"], ["dispatches": [Any]()]))
            let listed = try client.call("list")[objects: "channels"] ?? []
            #expect(listed.map { $0["channel"] as? String } == ["starport/gate"])
            #expect(listed.first?[int: "watchers"] == 0)
        }
    }

    @Test("get returns the same state as subscribe")
    func getMatchesSubscribe() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            let subscribed = try client.call("subscribe", ["channel": "delorean/same"])
            let got = try client.call("get", ["channel": "delorean/same"])
            #expect(jsonEqual(subscribed["state"], got["state"]))
            #expect(got[int: "seq"] == subscribed[int: "seq"])
        }
    }

    @Test("unsubscribe without subscribe is not_subscribed; after subscribe it is {}")
    func unsubscribe() throws {
        try withTestServer { server in
            let client = try server.connectReady()
            let never = try client.request("unsubscribe", ["channel": "timers/never"])
            #expect(never.errorCode == .notSubscribed)
            #expect(never.errorMessage?.contains("timers/never") == true, "message: \(describe([never]))")

            try client.call("subscribe", ["channel": "timers/once"])
            let result = try client.call("unsubscribe", ["channel": "timers/once"])
            #expect(result.isEmpty)
            #expect(try client.request("unsubscribe", ["channel": "timers/once"]).errorCode == .notSubscribed)
            #expect(try client.call("stats")[int: "subscriptions"] == 0)
        }
    }

    @Test("too many subscriptions is too_many_subscriptions")
    func subscriptionLimit() throws {
        try withTestServer({ $0.maxSubscriptionsPerSession = 3 }) { server in
            let client = try server.connectReady()
            for n in 1...3 {
                try client.call("subscribe", ["channel": "timers/t\(n)"])
            }
            let over = try client.request("subscribe", ["channel": "timers/t4"])
            #expect(over.errorCode == .tooManySubscriptions)
            #expect(try client.request("subscribe", ["channel": "timers/t1"]).isOK, "re-subscribe is not a new one")
        }
    }
}
