import OutaTimeTestSupport
import Foundation
import OutaTimeClient
import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// Subscriptions and mirrors against the real server.
@Suite("Subscriptions")
struct SubscriptionTests {
    @Test("a DeLorean mirror follows set_destination and a whole trip, and equals a fresh get")
    func deloreanMirror() throws {
        try withTestServer({ $0.deloreanTickMs = 1 }) { server in
            try withClientLoop { clients in
                let connection = clients.connect(port: server.port)
                var subscribed: Result<ChannelMirror, ClientError>?
                var events: [ChannelEvent] = []
                var speeds: [JSONValue] = []
                connection.onEvent = { events.append($0) }
                connection.onTick = { speeds.append($0.data) }
                connection.subscribe("delorean/main") { subscribed = $0 }
                clients.expect("the first snapshot") { subscribed != nil }
                let subscription = try subscribed?.get()
                let first = try #require(subscription)
                #expect(first.seq == 0 && first.isSynced && first.kind == .delorean)
                #expect(first.watchers.map(\.name) == ["client-test"])

                var reply: Result<JSONValue, ClientError>?
                connection.command("delorean/main", action: "set_destination",
                                   args: ["time": .string("1985-10-26T01:21:00Z")]) { reply = $0 }
                clients.expect("the command's reply") { reply != nil }
                // The issuer's event precedes its reply (§8): the mirror already has it.
                let afterSet = try #require(connection.mirror("delorean/main"))
                #expect(afterSet.seq == 1)
                guard case .delorean(let car)? = afterSet.state else {
                    Issue.record("no DeLorean state in \(afterSet)")
                    return
                }
                #expect(car.destinationTime == "1985-10-26T01:21:00Z")

                // A second client travels; this one watches the trip.
                let other = try BlockingClient(options: ClientOptions(port: server.port, name: "Doc"))
                defer { other.close() }
                _ = try other.send(.command("delorean/main", action: "travel"))
                clients.expect("time_travel") { connection.mirror("delorean/main")?.seq == 3 }

                #expect(events.map(\.event) == ["destination_set", "acceleration_started", "time_travel"])
                #expect(events.map(\.seq) == [1, 2, 3])
                #expect(!speeds.isEmpty)
                let mirror = try #require(connection.mirror("delorean/main"))
                guard case .delorean(let arrived)? = mirror.state else {
                    Issue.record("no DeLorean state")
                    return
                }
                #expect(arrived.presentTime == "1985-10-26T01:21:00Z")
                #expect(arrived.lastDeparted == car.presentTime)
                #expect(arrived.status == .parked)

                let fresh = try other.send(.get("delorean/main"))
                #expect(fresh.seq == mirror.seq)
                #expect(try ChannelState(kind: .delorean, json: fresh.state) == mirror.state)
            }
        }
    }

    @Test("presence and messages reach the subscriber; the mirror keeps the watchers")
    func presenceAndMessages() throws {
        try withTestServer { server in
            try withClientLoop { clients in
                let marty = clients.connect(port: server.port) { $0.name = "Marty" }
                var messages: [MessagePush] = []
                var presence: [PresencePush] = []
                marty.onMessage = { messages.append($0) }
                marty.onPresence = { presence.append($0) }
                var ready = false
                marty.subscribe("laps/track") { _ in ready = true }
                clients.expect("subscribed") { ready }

                let doc = clients.connect(port: server.port) { $0.name = "Doc" }
                var docReady = false
                doc.subscribe("laps/track") { _ in docReady = true }
                clients.expect("Doc joins") { docReady && !presence.isEmpty }
                #expect(presence.first?.joined.map(\.name) == ["Doc"])
                #expect(marty.mirror("laps/track")?.watchers.map(\.name) == ["Marty", "Doc"])

                var delivered: Result<PublishResult, ClientError>?
                doc.send(.publish("laps/track", data: .string("Great Scott!"))) { delivered = $0 }
                clients.expect("the message") { !messages.isEmpty && delivered != nil }
                #expect(messages.first?.from.name == "Doc")
                #expect(messages.first?.data == .string("Great Scott!"))
                let count = try delivered?.get().delivered
                #expect(count == 2)

                var left = false
                doc.unsubscribe("laps/track") { _ in left = true }
                clients.expect("Doc leaves") { left && presence.count == 2 }
                #expect(doc.mirror("laps/track") == nil)
                #expect(marty.mirror("laps/track")?.watchers.map(\.name) == ["Marty"])
            }
        }
    }

    @Test("a refused subscription fails its completion and leaves no mirror")
    func refusedSubscription() throws {
        try withTestServer { server in
            try withClientLoop { clients in
                let connection = clients.connect(port: server.port)
                var outcome: Result<ChannelMirror, ClientError>?
                var reported: [String] = []
                connection.onSubscriptionFailed = { channel, _ in reported.append(channel) }
                connection.subscribe("cars/main") { outcome = $0 }
                clients.expect("the refusal") { outcome != nil }
                guard case .failure(.server(let error))? = outcome else {
                    Issue.record("expected a server error, got \(String(describing: outcome))")
                    return
                }
                #expect(error.errorCode == .unknownKind)
                #expect(reported == ["cars/main"])
                #expect(connection.mirror("cars/main") == nil)
            }
        }
    }
}
