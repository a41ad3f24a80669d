import Foundation
import Testing
import OutaTimeProtocol

/// Encodes `message` as the server does and returns the JSON text.
func encodedText(_ message: some Encodable) throws -> String {
    String(decoding: try MessageEncoder().body(message), as: UTF8.self)
}

/// Encodes `message` and reads it back as a plain dictionary, independently
/// of the Codable types.
func encodedObject(_ message: some Encodable) throws -> [String: Any] {
    let data = try MessageEncoder().body(message)
    return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
}

/// Encodes `value` and decodes it back as the same type.
func roundTrip<T: Codable>(_ value: T) throws -> T {
    try JSONDecoder().decode(T.self, from: try MessageEncoder().body(value))
}

@Suite("Encoded wire types")
struct WireTypeTests {
    static let doc = Watcher(session: "s1", name: "Doc")

    @Test("a success reply has type, id, ok and result")
    func replyOK() throws {
        let object = try encodedObject(ReplyOK(id: .int(7), result: PublishResult(delivered: 3)))
        #expect(Set(object.keys) == ["type", "id", "ok", "result"])
        #expect(object["type"] as? String == "reply")
        #expect(object["id"] as? Int == 7)
        #expect(object["ok"] as? Bool == true)
        #expect((object["result"] as? [String: Any])?["delivered"] as? Int == 3)
    }

    @Test("a string id is echoed as a string")
    func replyStringID() throws {
        let object = try encodedObject(ReplyOK(id: .string("req-1"), result: EmptyResult()))
        #expect(object["id"] as? String == "req-1")
    }

    @Test("an empty result is {}")
    func emptyResult() throws {
        #expect(try encodedText(EmptyResult()) == "{}")
        #expect(try encodedText(ReplyOK(id: .int(1), result: EmptyResult())).contains(#""result":{}"#))
        #expect(try roundTrip(EmptyResult()) == EmptyResult())
    }

    @Test("a failure reply has type, id, ok false and error with code and message")
    func replyError() throws {
        let error = ProtocolError(.notSubscribed, "not subscribed to 'laps/a'")
        let object = try encodedObject(ReplyError(id: .string("x"), error: error))
        #expect(Set(object.keys) == ["type", "id", "ok", "error"])
        #expect(object["type"] as? String == "reply")
        #expect(object["ok"] as? Bool == false)
        let inner = try #require(object["error"] as? [String: Any])
        #expect(Set(inner.keys) == ["code", "message"])
        #expect(inner["code"] as? String == "not_subscribed")
        #expect(inner["message"] as? String == "not subscribed to 'laps/a'")
    }

    @Test("an error push has type error and the error object")
    func errorPush() throws {
        let object = try encodedObject(ErrorPush(error: ProtocolError(.badJSON, "nope")))
        #expect(Set(object.keys) == ["type", "error"])
        #expect(object["type"] as? String == "error")
        #expect((object["error"] as? [String: Any])?["code"] as? String == "bad_json")
    }

    @Test("bye reasons use the contract's names", arguments: [
        (ByeReason.serverShutdown, "server_shutdown"), (.idleTimeout, "idle_timeout"),
        (.helloTimeout, "hello_timeout"), (.slowConsumer, "slow_consumer"),
        (.protocolError, "protocol_error"), (.unsupportedProtocol, "unsupported_protocol"),
        (.unauthorized, "unauthorized"),
    ])
    func byePush(reason: ByeReason, wire: String) throws {
        // Compared parsed: JSONEncoder's key order differs between encodes.
        let object = try encodedObject(ByePush(reason: reason))
        #expect(object as? [String: String] == ["type": "bye", "reason": wire])
        #expect(reason.rawValue == wire)
    }

    @Test("a message push carries channel (unescaped), from and data")
    func messagePush() throws {
        let push = MessagePush(channel: "delorean/main", from: Self.doc, data: .object(["text": .string("1.21 GW")]))
        let text = try encodedText(push)
        #expect(text.contains(#""channel":"delorean/main""#))
        let object = try encodedObject(push)
        #expect(Set(object.keys) == ["type", "channel", "from", "data"])
        #expect(object["type"] as? String == "message")
        let from = try #require(object["from"] as? [String: Any])
        #expect(from["session"] as? String == "s1")
        #expect(from["name"] as? String == "Doc")
        #expect((object["data"] as? [String: Any])?["text"] as? String == "1.21 GW")
    }

    @Test("a presence push always has both arrays")
    func presencePush() throws {
        let object = try encodedObject(PresencePush(channel: "laps/a", joined: [Self.doc]))
        #expect(Set(object.keys) == ["type", "channel", "joined", "left"])
        #expect(object["type"] as? String == "presence")
        #expect((object["joined"] as? [Any])?.count == 1)
        #expect((object["left"] as? [Any])?.isEmpty == true)
    }

    @Test("an event push carries seq, event, data and at")
    func eventPush() throws {
        let push = EventPush(channel: "starport/x", seq: 42, event: "departed", data: .object([:]), at: "1985-10-26T01:21:00Z")
        let object = try encodedObject(push)
        #expect(Set(object.keys) == ["type", "channel", "seq", "event", "data", "at"])
        #expect(object["type"] as? String == "event")
        #expect(object["seq"] as? Int == 42)
        #expect(object["event"] as? String == "departed")
        #expect(object["at"] as? String == "1985-10-26T01:21:00Z")
    }

    @Test("a tick push has no seq")
    func tickPush() throws {
        let object = try encodedObject(TickPush<JSONValue>(channel: "timers/t", data: .object(["mph": .int(88)])))
        #expect(Set(object.keys) == ["type", "channel", "data"])
        #expect(object["type"] as? String == "tick")
    }

    @Test("hello result uses snake_case keys and decodes back")
    func helloResult() throws {
        let result = HelloResult(server: "outatime/0.1", protocol: 1, session: "s1", heartbeatMs: 15_000, maxFrame: 65_536, role: "operate")
        let object = try encodedObject(result)
        #expect(Set(object.keys) == ["server", "protocol", "session", "heartbeat_ms", "max_frame", "role"])
        #expect(object["heartbeat_ms"] as? Int == 15_000)
        #expect(object["max_frame"] as? Int == 65_536)
        #expect(try roundTrip(result) == result)
    }

    @Test("subscribe result without state omits state, recovered and events")
    func subscribeSnapshotless() throws {
        let result = SubscribeResult(channel: "laps/a", kind: .laps, seq: 0, watchers: [Self.doc])
        let object = try encodedObject(result)
        #expect(Set(object.keys) == ["channel", "kind", "seq", "watchers"])
        #expect(object["kind"] as? String == "laps")
        #expect(try roundTrip(result) == result)
    }

    @Test("subscribe result with a snapshot, and with a recovery")
    func subscribeVariants() throws {
        let snapshot = SubscribeResult(channel: "laps/a", kind: .laps, seq: 3, watchers: [], state: .object(["laps": .array([])]))
        #expect(Set(try encodedObject(snapshot).keys) == ["channel", "kind", "seq", "watchers", "state"])
        #expect(try roundTrip(snapshot) == snapshot)

        let event = HistoryEvent(seq: 4, event: "lap", data: .object(["ms": .int(61_000)]), at: "2025-01-01T00:00:00Z")
        let recovery = SubscribeResult(channel: "laps/a", kind: .laps, seq: 4, watchers: [], recovered: true, events: [event])
        let object = try encodedObject(recovery)
        #expect(Set(object.keys) == ["channel", "kind", "seq", "watchers", "recovered", "events"])
        #expect(object["recovered"] as? Bool == true)
        let first = try #require((object["events"] as? [[String: Any]])?.first)
        #expect(Set(first.keys) == ["seq", "event", "data", "at"])
        #expect(try roundTrip(recovery) == recovery)
    }

    @Test("list, get, history, ping and publish results round-trip with their keys")
    func otherResults() throws {
        let list = ListResult(channels: [ChannelSummary(channel: "timers/t", kind: .timers, seq: 9, watchers: 2)])
        let summary = try #require((try encodedObject(list)["channels"] as? [[String: Any]])?.first)
        #expect(Set(summary.keys) == ["channel", "kind", "seq", "watchers"])
        #expect(try roundTrip(list) == list)

        let get = GetResult(channel: "timers/t", kind: .timers, seq: 9, state: .object([:]))
        #expect(Set(try encodedObject(get).keys) == ["channel", "kind", "seq", "state"])
        #expect(try roundTrip(get) == get)

        let history = HistoryResult(channel: "timers/t", seq: 9, events: [])
        #expect(Set(try encodedObject(history).keys) == ["channel", "seq", "events"])
        #expect(try roundTrip(history) == history)

        #expect(try encodedObject(PingResult(time: "1955-11-12T22:04:00Z"))["time"] as? String == "1955-11-12T22:04:00Z")
        #expect(try encodedText(PublishResult(delivered: 0)) == #"{"delivered":0}"#)
    }

    @Test("request ids encode as bare JSON values and decode back")
    func requestIDs() throws {
        #expect(try encodedText([RequestID.int(5), .string("a")]) == #"[5,"a"]"#)
        #expect(try roundTrip([RequestID.int(9_007_199_254_740_992), .string("x")]) == [.int(9_007_199_254_740_992), .string("x")])
    }

    @Test("request id validation", arguments: [
        (JSONValue.int(0), RequestID?.some(.int(0))),
        (.int(-1), nil),
        (.int(9_007_199_254_740_993), nil),
        // The JSON reader makes every exact integer text (`3.0` too) an
        // `.int`; a `.double` has a fraction, so even a whole one is refused.
        (.double(3.0), nil),
        (.double(9_007_199_254_740_992), nil),
        (.double(3.5), nil),
        (.string(String(repeating: "é", count: 64)), .string(String(repeating: "é", count: 64))),
        (.string(String(repeating: "e", count: 65)), nil),
        (.bool(true), nil),
        (.null, nil),
    ])
    func requestIDValidation(value: JSONValue, expected: RequestID?) {
        #expect(RequestID(validating: value) == expected)
    }
}
