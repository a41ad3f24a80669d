import Foundation
import OutaTimeProtocol
import OutaTimeTestKit
import Testing

/// The body the server's event loop sends for `message`: its encoder
/// (``ReusableMessageEncoder``, the ``JSONWritable`` fast paths included).
func serverBody(_ message: some Encodable) throws -> Data {
    let frame = try ReusableMessageEncoder().frame(message)
    return withExtendedLifetime(frame) { Data(frame.body) }
}

extension ServerPush {
    /// The body the server sends for this push.
    func serverBody() throws -> Data {
        switch self {
        case .event(let push): try OutaTimeProtocolTests.serverBody(push)
        case .tick(let push): try OutaTimeProtocolTests.serverBody(push)
        case .message(let push): try OutaTimeProtocolTests.serverBody(push)
        case .dropped(let push): try OutaTimeProtocolTests.serverBody(push)
        case .presence(let push): try OutaTimeProtocolTests.serverBody(push)
        case .error(let push): try OutaTimeProtocolTests.serverBody(push)
        case .bye(let push): try OutaTimeProtocolTests.serverBody(push)
        case .unknown(let type): try OutaTimeProtocolTests.serverBody(JSONValue.object(["type": .string(type)]))
        }
    }
}

/// Encoding with the server's encoder, then decoding with the same types,
/// gives the pushes back (PROTOCOL.md §7).
@Suite("Push round trips")
struct PushRoundTripTests {
    static let doc = Watcher(session: "k3x9qa-2", name: "Doc \"Emmett\" Brown \u{1}é/")
    static let marty = Watcher(session: "k3x9qa-17", name: "Marty")

    /// Pushes of every type, with payloads of every JSON type and the
    /// optional members both present and absent.
    static let samples: [ServerPush] = {
        var generator = SeededGenerator(seed: 1985)
        var samples: [ServerPush] = []
        for seq in 1...6 {
            samples.append(.event(EventPush(channel: "laps/track_2", seq: Int64(seq), event: "lap_completed",
                                            data: .random(depth: 3, using: &generator), at: "2026-11-22T08:01:32Z")))
            samples.append(.tick(TickPush(channel: "delorean/main", data: .random(depth: 3, using: &generator))))
            samples.append(.message(MessagePush(channel: "timers/1985.10.26", from: doc,
                                                data: .random(depth: 3, using: &generator))))
        }
        samples += [
            .event(EventPush(channel: "delorean/main", seq: Int64(1) << 53, event: "acceleration_started",
                             data: .object([:]), at: "2026-11-22T08:00:05Z")),
            .tick(TickPush(channel: "laps/a", data: .object(["lap_number": .int(4), "lap_elapsed_ms": .int(55)]))),
            .message(MessagePush(channel: "delorean/main", from: marty, data: .null)),
            .message(MessagePush(channel: "delorean/main", from: marty, data: .string("Great Scott!"))),
            .dropped(DroppedPush(channel: "delorean/main", messages: 1)),
            .dropped(DroppedPush(channel: "starport/hill-valley", messages: 12_897)),
            .presence(PresencePush(channel: "delorean/main", joined: [doc])),
            .presence(PresencePush(channel: "delorean/main", joined: [], left: [doc, marty], watcherCount: 1)),
            .presence(PresencePush(channel: "laps/crowd", joined: [marty], left: [doc], watcherCount: 250,
                                   joinedCount: 140, leftCount: 1)),
            .presence(PresencePush(channel: "laps/crowd", joined: [], left: [], watcherCount: 0, leftCount: 0)),
        ]
        samples += ErrorCode.allCases.map { .error(ErrorPush(error: ProtocolError($0, "what \($0.rawValue) means: \"x\"\n"))) }
        samples += ByeReason.allCases.map { .bye(ByePush(reason: $0)) }
        return samples
    }()

    @Test("every push decodes, as its own type and as a ServerPush, to what was encoded", arguments: samples)
    func roundTrip(_ push: ServerPush) throws {
        let body = try push.serverBody()
        #expect(try JSONDecoder().decode(ServerPush.self, from: body) == push)
        let decoder = JSONDecoder()
        switch push {
        case .event(let event): #expect(try decoder.decode(EventPush.self, from: body) == event)
        case .tick(let tick): #expect(try decoder.decode(TickPush<JSONValue>.self, from: body) == tick)
        case .message(let message): #expect(try decoder.decode(MessagePush.self, from: body) == message)
        case .dropped(let dropped): #expect(try decoder.decode(DroppedPush.self, from: body) == dropped)
        case .presence(let presence): #expect(try decoder.decode(PresencePush.self, from: body) == presence)
        case .error(let error): #expect(try decoder.decode(ErrorPush.self, from: body) == error)
        case .bye(let bye): #expect(try decoder.decode(ByePush.self, from: body) == bye)
        case .unknown: Issue.record("no unknown pushes among the samples")
        }
    }

    @Test("a decoded push encodes to the same JSON: members absent stay absent, nulls stay null", arguments: samples)
    func sameJSONAgain(_ push: ServerPush) throws {
        let body = try push.serverBody()
        let again = try JSONDecoder().decode(ServerPush.self, from: body).serverBody()
        // Compared parsed: a JSONValue object's keys come out in hash order.
        #expect(try JSONValue.parse(again) == JSONValue.parse(body))
    }

    @Test("optional presence counts: absent when nil, read back as nil")
    func presenceCounts() throws {
        let plain = try serverBody(PresencePush(channel: "laps/a", joined: [Self.doc], left: []))
        #expect(String(decoding: plain, as: UTF8.self)
            == #"{"type":"presence","channel":"laps/a","joined":[{"session":"k3x9qa-2","name":"Doc \"Emmett\" Brown \u0001é/"}],"left":[]}"#)
        let decoded = try JSONDecoder().decode(PresencePush.self, from: plain)
        #expect(decoded.watcherCount == nil && decoded.joinedCount == nil && decoded.leftCount == nil)
    }

    @Test("a message's null data is present on the wire and decodes as .null")
    func messageNull() throws {
        let body = try serverBody(MessagePush(channel: "laps/a", from: Self.marty, data: .null))
        #expect(String(decoding: body, as: UTF8.self)
            == #"{"type":"message","channel":"laps/a","from":{"session":"k3x9qa-17","name":"Marty"},"data":null}"#)
        #expect(try JSONDecoder().decode(MessagePush.self, from: body).data == .null)
    }

    /// A typed tick payload, as the server's timer lists send one.
    struct CountdownTick: Encodable, Sendable, JSONWritable {
        let remainingS: Int
        let note: String?

        enum CodingKeys: String, CodingKey {
            case remainingS = "remaining_s", note
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(remainingS, forKey: .remainingS)
            try container.encode(note, forKey: .note)
        }

        func writeFields(to fields: inout JSONFields) throws {
            fields.write("remaining_s", remainingS)
            fields.write("note", note)
        }
    }

    @Test("a tick with a typed payload on the server reads back with its data as JSONValue")
    func typedTick() throws {
        let body = try serverBody(TickPush(channel: "timers/t", data: CountdownTick(remainingS: 599, note: nil)))
        let tick = try JSONDecoder().decode(TickPush<JSONValue>.self, from: body)
        #expect(tick == TickPush(channel: "timers/t", data: .object(["remaining_s": .int(599), "note": .null])))
        #expect(try JSONDecoder().decode(ServerPush.self, from: body) == .tick(tick))
    }

    @Test("a recovery's history entry makes the push of the same event")
    func eventFromHistory() {
        let entry = HistoryEvent(seq: 3, event: "time_travel", data: .object(["speed_mph": .int(0)]), at: "2026-11-22T08:00:13Z")
        #expect(EventPush(channel: "delorean/main", history: entry)
            == EventPush(channel: "delorean/main", seq: 3, event: "time_travel", data: .object(["speed_mph": .int(0)]),
                         at: "2026-11-22T08:00:13Z"))
    }

    @Test("unknown push types are .unknown; unknown members are ignored")
    func unknownTypesAndMembers() throws {
        let weather = Data(#"{"type":"weather","seq":"high","channel":5}"#.utf8)
        #expect(try JSONDecoder().decode(ServerPush.self, from: weather) == .unknown(type: "weather"))
        let later = Data(#"{"type":"bye","reason":"idle_timeout","retry_after_ms":500,"hint":{"a":[1]}}"#.utf8)
        #expect(try JSONDecoder().decode(ServerPush.self, from: later) == .bye(ByePush(reason: .idleTimeout)))
        #expect(ServerPush.unknown(type: "weather").type == "weather")
        #expect(ServerPush.tick(TickPush(channel: "laps/a", data: .null)).type == "tick")
    }
}
