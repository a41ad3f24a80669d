import OutaTimeTestSupport
import Foundation
import OutaTimeProtocol
import OutaTimeServer
import Testing

/// `delorean/<car>` over TCP: a whole trip as two subscribers see it, and
/// the action errors (domain.md, "delorean/<car>").
@Suite("delorean flow", .timeLimit(.minutes(3)))
struct DeLoreanFlowTests {
    static let channel = "delorean/outatime"
    static let destination = "1955-11-05T06:00:00Z"

    /// 5 ms acceleration ticks: a trip takes under half a second.
    static func fastTicks(_ config: inout ServerConfig) { config.deloreanTickMs = 5 }

    @Test("a whole trip seen by two subscribers: destination, 88 rising ticks, then time_travel")
    func wholeTrip() throws {
        try withTestServer(Self.fastTicks) { server in
            let channel = Self.channel
            let marty = try server.connectReady(name: "Marty")
            let doc = try server.connectReady(name: "Doc")
            let subscribed = try marty.subscribe(channel)
            let initial = try #require(subscribed[object: "state"])
            let seq0 = try #require(subscribed[int: "seq"])
            try doc.subscribe(channel)
            let present = try #require(initial["present_time"] as? String, "state: \(describe([initial]))")
            #expect(initial["status"] as? String == "parked")
            #expect(initial[int: "speed_mph"] == 0)

            marty.pushes.removeAll()
            let afterSet = try marty.perform(channel, "set_destination", ["time": Self.destination])
            let setEvent = try #require(marty.pushes.first { $0.isEvent("destination_set", on: channel) },
                                        "the issuer's event must arrive before its reply: \(describe(marty.transcript))")
            #expect(setEvent.data?["destination_time"] as? String == Self.destination)
            #expect(setEvent[int: "seq"] == seq0 + 1)
            #expect(afterSet["destination_time"] as? String == Self.destination, "result: \(describe([afterSet]))")
            marty.pushes.removeAll()

            try marty.perform(channel, "travel")
            // The trip takes 88 × 5 ms: both are answered while accelerating.
            #expect(try marty.failure(channel, "travel") == .conflict)
            #expect(try marty.failure(channel, "set_destination", ["time": "2015-10-21T16:29:00Z"]) == .conflict)

            var seen: [String: [Int]] = [:]
            for (who, client) in [("Marty", marty), ("Doc", doc)] {
                let frames = try client.collect(until: "time_travel", timeout: 15) {
                    $0.isEvent("time_travel", on: channel)
                }
                let relevant = frames.filter { $0.channel == channel && ($0.type == "tick" || $0.type == "event") }
                let start = try #require(relevant.firstIndex { $0.isEvent("acceleration_started", on: channel) },
                                         "\(who): no acceleration_started: \(describe(relevant))")
                #expect(!relevant[..<start].contains { $0.type == "tick" },
                        "\(who): a tick arrived before acceleration_started: \(describe(Array(relevant.prefix(start + 1))))")
                let trip = Array(relevant[(start + 1)...])
                let speeds = trip.filter { $0.type == "tick" }.map { $0.data?[int: "speed_mph"] ?? -1 }
                #expect(speeds == Array(1...88), "\(who) saw \(speeds.count) ticks: \(speeds)")
                #expect(trip.dropLast().allSatisfy { $0.type == "tick" },
                        "\(who): only ticks between acceleration_started and time_travel: \(describe(trip))")

                let travel = try #require(trip.last)
                let data = try #require(travel.data, "\(who): \(describe([travel]))")
                #expect(data["last_departed"] as? String == present, "\(who): \(describe([travel]))")
                #expect(data["present_time"] as? String == Self.destination, "\(who): \(describe([travel]))")
                #expect(data[int: "speed_mph"] == 0)
                let startSeq = relevant[start][int: "seq"] ?? -1
                #expect(startSeq == seq0 + 2, "\(who): \(describe([relevant[start]]))")
                #expect(travel[int: "seq"] == startSeq + 1, "\(who): seq rises by exactly 1 per event")
                seen[who] = [startSeq, travel[int: "seq"] ?? -1]
            }
            #expect(seen["Marty"] == seen["Doc"], "both subscribers see the same seqs: \(seen)")

            let after = try marty.state(channel)
            #expect(after["status"] as? String == "parked")
            #expect(after[int: "speed_mph"] == 0)
            #expect(after["destination_time"] as? String == Self.destination, "the destination stays")
            #expect(after["present_time"] as? String == Self.destination)
            #expect(after["last_departed"] as? String == present)
            #expect(try marty.call("get", ["channel": channel])[int: "seq"] == seq0 + 3)

            // The clock stopped with the trip: no more ticks.
            let later = try doc.drain(for: 0.15)
            #expect(!later.contains { $0.type == "tick" }, "ticks after the trip: \(describe(later))")
        }
    }

    @Test("travel again after a trip: the destination is kept, a second trip starts")
    func secondTrip() throws {
        try withTestServer(Self.fastTicks) { server in
            let channel = "delorean/again"
            let client = try server.connectReady()
            try client.subscribe(channel)
            try client.perform(channel, "set_destination", ["time": "1885-09-02T08:00:00Z"])
            try client.perform(channel, "travel")
            _ = try client.awaitEvent("time_travel", on: channel, timeout: 10)
            try client.perform(channel, "travel")
            let second = try client.awaitEvent("time_travel", on: channel, timeout: 10)
            #expect(second.data?["last_departed"] as? String == "1885-09-02T08:00:00Z")
            #expect(second.data?["present_time"] as? String == "1885-09-02T08:00:00Z")
        }
    }

    @Test("travel without a destination is no_destination; nothing changes")
    func travelWithoutDestination() throws {
        try withTestServer(Self.fastTicks) { server in
            let client = try server.connectReady()
            try client.subscribe(Self.channel)
            let reply = try client.command(Self.channel, "travel")
            #expect(reply.errorCode == .noDestination, "\(describe([reply]))")
            #expect(reply.errorMessage?.isEmpty == false)
            let state = try client.state(Self.channel)
            #expect(state["status"] as? String == "parked")
            #expect(try client.call("get", ["channel": Self.channel])[int: "seq"] == 0)
            #expect(!client.pushes.contains { $0.type == "event" || $0.type == "tick" }, "\(describe(client.pushes))")
        }
    }

    @Test("set_destination with a time that is not ISO 8601 is invalid_time", arguments: [
        "yesterday", "1955-11-05", "1955-11-05 06:00", "",
    ])
    func invalidDestination(time: String) throws {
        try withTestServer(Self.fastTicks) { server in
            let client = try server.connectReady()
            try client.subscribe(Self.channel)
            let reply = try client.command(Self.channel, "set_destination", ["time": time])
            #expect(reply.errorCode == .invalidTime, "'\(time)': \(describe([reply]))")
            #expect(try client.state(Self.channel)["destination_time"] is NSNull)
            #expect(try client.failure(Self.channel, "set_destination") == .invalidArgs, "a missing time")
        }
    }

    @Test("unknown actions are unknown_action; a watch role cannot travel")
    func unknownActionAndRole() throws {
        let tokens = [AccessToken(token: "watch-1885", name: "Clara", role: .watch)]
        try withTestServer({ Self.fastTicks(&$0); $0.tokens = tokens }) { server in
            let watcher = try server.connect()
            try watcher.hello(token: "watch-1885")
            #expect(try watcher.failure(Self.channel, "fly") == .unknownAction)
            #expect(try watcher.failure(Self.channel, "travel") == .forbidden)
            #expect(try watcher.failure(Self.channel, "set_destination", ["time": Self.destination]) == .forbidden)
        }
    }
}
