import Foundation
import OutaTimeClient
import OutaTimeProtocol
import OutaTimeTestSupport
import Testing

/// The client reads pushes with the protocol module's own types: what the
/// server's encoder writes reaches the callbacks as the very values encoded.
@Suite("Push decoding")
struct PushDecodingTests {
    /// A typed tick payload, as the server's timer lists send one: encoded
    /// by its fields directly, read by the client as JSON.
    struct CountdownTick: Encodable, Sendable, JSONWritable {
        let id: Int
        let remainingS: Int

        enum CodingKeys: String, CodingKey {
            case id, remainingS = "remaining_s"
        }

        func writeFields(to fields: inout JSONFields) {
            fields.write("id", id)
            fields.write("remaining_s", remainingS)
        }
    }

    /// Everything the callbacks reported, in order.
    final class Received {
        var events: [ChannelEvent] = []
        var ticks: [TickPush<JSONValue>] = []
        var messages: [MessagePush] = []
        var presence: [PresencePush] = []
        var errors: [ServerError] = []

        init(_ connection: OutaTimeConnection) {
            connection.onEvent = { self.events.append($0) }
            connection.onTick = { self.ticks.append($0) }
            connection.onMessage = { self.messages.append($0) }
            connection.onPresence = { self.presence.append($0) }
            connection.onServerError = { self.errors.append($0) }
        }
    }

    @Test("every push the server's encoder writes reaches its callback as the protocol type, equal to what was encoded")
    func serverEncodedPushes() throws {
        let doc = Watcher(session: "k3x9qa-2", name: "Doc")
        let event = EventPush(channel: "delorean/main", seq: 1, event: "destination_set",
                              data: .object(["destination_time": .string("1985-10-26T01:21:00Z")]), at: "2026-11-22T07:54:02Z")
        let tick = TickPush(channel: "timers/1985.10.26", data: CountdownTick(id: 1, remainingS: 599))
        let message = MessagePush(channel: "delorean/main", from: doc, data: .null)
        let presence = PresencePush(channel: "delorean/main", joined: [doc], left: [], watcherCount: 250, joinedCount: 140)
        let error = ErrorPush(error: ProtocolError(.serverBusy, "storage is backlogged; retry"))
        try withClientLoop { clients in
            let fake = try ScriptedServer(loop: clients.loop)
            defer { fake.close() }
            fake.answerHello { peer in
                fake.send(event, on: peer)
                fake.send(tick, on: peer)
                fake.send(message, on: peer)
                fake.send(presence, on: peer)
                fake.send(error, on: peer)
                fake.push(.object(["type": .string("weather"), "seq": .string("high")]), on: peer)  // ignored
                fake.send(ByePush(reason: .serverShutdown), on: peer)
            }
            let connection = clients.connect(port: fake.port) { $0.reconnect = false }
            let received = Received(connection)
            clients.expect("the bye") { if case .closed = connection.state { true } else { false } }

            #expect(connection.state == .closed(.bye(.serverShutdown)))
            #expect(received.events == [ChannelEvent(event)])
            #expect(received.events.first?.push == event)
            #expect(received.ticks == [TickPush(channel: "timers/1985.10.26",
                                                data: .object(["id": .int(1), "remaining_s": .int(599)]))])
            #expect(received.messages == [message])
            #expect(received.presence == [presence])
            #expect(received.errors == [ServerError(error.error)])
            #expect(received.errors.first?.errorCode == .serverBusy)
        }
    }

    @Test("an error push with a code this client does not know still reaches onServerError")
    func errorWithNewCode() throws {
        try withClientLoop { clients in
            let fake = try ScriptedServer(loop: clients.loop)
            defer { fake.close() }
            fake.answerHello { peer in
                fake.push(.object(["type": .string("error"),
                                   "error": .object(["code": .string("flux_overload"), "message": .string("1.21 GW")])]), on: peer)
            }
            let connection = clients.connect(port: fake.port)
            let received = Received(connection)
            clients.expect("the error") { !received.errors.isEmpty }
            #expect(received.errors == [ServerError(code: "flux_overload", message: "1.21 GW")])
            #expect(received.errors.first?.errorCode == nil)
            #expect(connection.isReady && connection.stats.disconnects == 0)
        }
    }

    @Test("a push of a known type that breaks its shape drops the link, naming the member", arguments: [
        (#"{"type":"event","channel":"delorean/main","seq":1,"event":"destination_set","data":{}}"#,
         "malformed 'event' push (at: missing)"),
        (#"{"type":"presence","channel":"delorean/main","joined":[{"session":"s"}],"left":[]}"#,
         "malformed 'presence' push (joined[0].name: missing)"),
        (#"{"type":"bye","reason":"tired"}"#, "malformed 'bye' push (reason: "),
    ])
    func malformedPush(_ frame: String, _ violation: String) throws {
        try withClientLoop { clients in
            let fake = try ScriptedServer(loop: clients.loop)
            defer { fake.close() }
            fake.answerHello { peer in
                fake.pushRaw(Array(frame.utf8), on: peer)
            }
            let connection = clients.connect(port: fake.port) { $0.reconnect = false }
            let received = Received(connection)
            clients.expect("the drop") { if case .closed = connection.state { true } else { false } }
            guard case .closed(.protocolViolation(let why)?) = connection.state else {
                Issue.record("expected a protocol violation, got \(connection.state)")
                return
            }
            #expect(why.hasPrefix(violation), "\(why)")
            #expect(received.events.isEmpty && received.presence.isEmpty)
        }
    }

    @Test("a timer list's ticks, typed on the real server, arrive as TickPush<JSONValue>")
    func realServerTypedTicks() throws {
        try withTestServer { server in
            try withClientLoop { clients in
                let connection = clients.connect(port: server.port)
                let received = Received(connection)
                var subscribed = false
                connection.subscribe("timers/1985.10.26") { _ in subscribed = true }
                clients.expect("subscribed") { subscribed }
                var added: Result<JSONValue, ClientError>?
                connection.command("timers/1985.10.26", action: "add",
                                   args: ["event": .string("Clock tower"), "remaining_s": .int(600)]) { added = $0 }
                clients.expect("the timer") { added != nil }
                connection.command("timers/1985.10.26", action: "start", args: ["id": .int(1)]) { _ in }
                clients.expect("a tick") { !received.ticks.isEmpty }

                #expect(received.events.map(\.event) == ["timer_added", "timer_started"])
                let tick = try #require(received.ticks.first)
                #expect(tick.channel == "timers/1985.10.26")
                guard case .object(let data) = tick.data, case .array(let timers)? = data["timers"],
                      case .string(let at)? = data["at"] else {
                    Issue.record("not a timers tick: \(tick.data)")
                    return
                }
                #expect(Set(data.keys) == ["timers", "at"])
                #expect(ISOTime.parse(at) != nil)
                #expect(timers.count == 1)
                guard case .object(let entry)? = timers.first, case .int(let remaining)? = entry["remaining_s"] else {
                    Issue.record("not a countdown: \(timers)")
                    return
                }
                #expect(entry["id"] == .int(1))
                #expect((590...600).contains(remaining))
            }
        }
    }
}
