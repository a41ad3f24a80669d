import Foundation
import OutaTimeProtocol
import Testing

/// The push examples of PROTOCOL.md decode to what they say, and pushes
/// that break §7's shapes are refused, naming the member.
@Suite("Push examples and malformed pushes")
struct PushExampleTests {
    static let doc = Watcher(session: "k3x9qa-2", name: "Doc")

    /// Examples from PROTOCOL.md, exactly as written there (§2, §3, §6.8,
    /// §6.9, §14, §15), with the push each one means.
    static let examples: [(text: String, push: ServerPush)] = [
        (#"{"type": "error", "error": {"code": "unknown_type", "message": "unknown request type 'subscribbe'; valid types: hello, ping, subscribe, unsubscribe, get, list, history, command, publish, stats"}}"#,
         .error(ErrorPush(error: ProtocolError(.unknownType, "unknown request type 'subscribbe'; valid types: hello, ping, subscribe, unsubscribe, get, list, history, command, publish, stats")))),
        (#"{"type": "bye", "reason": "unsupported_protocol"}"#, .bye(ByePush(reason: .unsupportedProtocol))),
        (#"{"type": "message", "channel": "delorean/main", "from": {"session": "k3x9qa-17", "name": "Marty"}, "data": {"text": "Doc, we have to go back!"}}"#,
         .message(MessagePush(channel: "delorean/main", from: Watcher(session: "k3x9qa-17", name: "Marty"),
                              data: .object(["text": .string("Doc, we have to go back!")])))),
        ("""
         {"type": "event", "channel": "delorean/main", "seq": 1, "event": "destination_set",
            "data": {"destination_time": "1985-10-26T01:21:00Z"}, "at": "2026-11-22T08:00:00Z"}
         """,
         .event(EventPush(channel: "delorean/main", seq: 1, event: "destination_set",
                          data: .object(["destination_time": .string("1985-10-26T01:21:00Z")]), at: "2026-11-22T08:00:00Z"))),
        (#"{"type":"tick","channel":"delorean/main","data":{"speed_mph":88}}"#,
         .tick(TickPush(channel: "delorean/main", data: .object(["speed_mph": .int(88)])))),
        (#"{"type": "tick", "channel": "timers/1985.10.26", "data": {"timers": [{"id": 1, "remaining_s": 599}, {"id": 4, "remaining_s": 42}], "at": "1985-10-26T01:21:01.000Z"}}"#,
         .tick(TickPush(channel: "timers/1985.10.26", data: .object([
             "timers": .array([.object(["id": .int(1), "remaining_s": .int(599)]), .object(["id": .int(4), "remaining_s": .int(42)])]),
             "at": .string("1985-10-26T01:21:01.000Z"),
         ])))),
        (#"{"type":"event","channel":"starport/hill-valley","seq":2,"event":"status_changed","data":{"id":1,"status":"in_flight","at":"2026-11-22T08:00:00Z"},"at":"2026-11-22T08:00:00Z"}"#,
         .event(EventPush(channel: "starport/hill-valley", seq: 2, event: "status_changed",
                          data: .object(["id": .int(1), "status": .string("in_flight"), "at": .string("2026-11-22T08:00:00Z")]),
                          at: "2026-11-22T08:00:00Z"))),
        (#"{"type":"presence","channel":"delorean/main","joined":[{"session":"k3x9qa-2","name":"Doc"}],"left":[]}"#,
         .presence(PresencePush(channel: "delorean/main", joined: [doc], left: []))),
        (#"{"type":"message","channel":"delorean/main","from":{"session":"k3x9qa-2","name":"Doc"},"data":"Great Scott!"}"#,
         .message(MessagePush(channel: "delorean/main", from: doc, data: .string("Great Scott!")))),
        (#"{"type":"presence","channel":"delorean/main","joined":[],"left":[{"session":"k3x9qa-2","name":"Doc"}]}"#,
         .presence(PresencePush(channel: "delorean/main", joined: [], left: [doc]))),
        (#"{"type":"bye","reason":"server_shutdown"}"#, .bye(ByePush(reason: .serverShutdown))),
    ]

    @Test("PROTOCOL.md's examples decode to the pushes they show", arguments: examples)
    func example(_ text: String, _ push: ServerPush) throws {
        #expect(try JSONDecoder().decode(ServerPush.self, from: Data(text.utf8)) == push)
    }

    /// The repository's PROTOCOL.md, found from this file.
    static func protocolDocument(from file: String = #filePath) throws -> String {
        var directory = URL(fileURLWithPath: file).deletingLastPathComponent()
        while directory.path != "/" {
            let candidate = directory.appendingPathComponent("protocol/PROTOCOL.md")
            if FileManager.default.fileExists(atPath: candidate.path) {
                return try String(contentsOf: candidate, encoding: .utf8)
            }
            directory.deleteLastPathComponent()
        }
        throw CocoaError(.fileNoSuchFile)
    }

    @Test("every one-line push example in PROTOCOL.md decodes as a known push and re-encodes to the same JSON")
    func everyExampleInTheDocument() throws {
        let pushTypes = ["event", "tick", "message", "presence", "error", "bye"]
        var checked = 0
        for line in try Self.protocolDocument().split(separator: "\n") {
            // Session transcripts (`← {…}`, `A ← {…}`) and bare JSON lines.
            guard let start = line.firstIndex(of: "{"), line.hasSuffix("}") else { continue }
            let prefix = line[..<start].trimmingCharacters(in: .whitespaces)
            guard ["", "←", "A ←", "B ←"].contains(prefix) else { continue }
            let text = Data(line[start...].utf8)
            guard case .object(let object)? = try? JSONValue.parse(text),
                  case .string(let type)? = object["type"], pushTypes.contains(type) else { continue }
            let push = try JSONDecoder().decode(ServerPush.self, from: text)
            #expect(push.type == type, "\(line)")
            #expect(try JSONValue.parse(push.serverBody()) == JSONValue.parse(text), "\(line)")
            checked += 1
        }
        // §2 error, §3 bye, §6.8 message, §14 ticks and events, §15's session.
        #expect(checked >= 20)
    }

    /// Pushes that break §7's shapes, with the start of the error's summary.
    static let malformed: [(text: String, summary: String)] = [
        (#"{"channel":"laps/a"}"#, "type: missing"),
        (#"{"type":7}"#, "type: Expected to decode String"),
        (#"{"type":"reply","id":1,"ok":true,"result":{}}"#, "type: a reply is not a push"),
        (#"{"type":"event","channel":"laps/a","event":"started","data":{},"at":"2026-11-22T08:00:00Z"}"#, "seq: missing"),
        (#"{"type":"event","channel":"laps/a","seq":"1","event":"started","data":{},"at":"2026-11-22T08:00:00Z"}"#,
         "seq: Expected to decode Int64"),
        (#"{"type":"event","channel":"laps/a","seq":1,"event":"started","at":"2026-11-22T08:00:00Z"}"#, "data: missing"),
        (#"{"type":"event","channel":"laps/a","seq":1,"event":"started","data":{},"at":null}"#,
         "at: null where a value is required"),
        (#"{"type":"tick","data":{"speed_mph":1}}"#, "channel: missing"),
        (#"{"type":"message","channel":"laps/a","from":{"session":"s"},"data":1}"#, "from.name: missing"),
        (#"{"type":"message","channel":"laps/a","from":{"session":"s","name":"n"}}"#, "data: missing"),
        (#"{"type":"presence","channel":"laps/a","joined":[]}"#, "left: missing"),
        (#"{"type":"presence","channel":"laps/a","joined":[null],"left":[]}"#, "joined[0]: null where a value is required"),
        (#"{"type":"presence","channel":"laps/a","joined":[],"left":[],"watcher_count":"3"}"#,
         "watcher_count: Expected to decode Int"),
        (#"{"type":"error","error":{"code":"gremlins","message":"x"}}"#, "error.code: "),
        (#"{"type":"error","error":{"code":"bad_json"}}"#, "error.message: missing"),
        (#"{"type":"error"}"#, "error: missing"),
        (#"{"type":"bye","reason":"tired"}"#, "reason: "),
        (#"{"type":"bye","reason":null}"#, "reason: null where a value is required"),
    ]

    @Test("a malformed push is refused with an error naming the member", arguments: malformed)
    func refused(_ text: String, _ summary: String) {
        do {
            let push = try JSONDecoder().decode(ServerPush.self, from: Data(text.utf8))
            Issue.record("decoded \(push)")
        } catch let error as DecodingError {
            #expect(error.summary.hasPrefix(summary), "\(error.summary)")
        } catch {
            Issue.record("not a DecodingError: \(error)")
        }
    }

    @Test("a push decoded as another push type is refused by its type")
    func wrongType() {
        let tick = Data(#"{"type":"tick","channel":"laps/a","data":{}}"#.utf8)
        #expect {
            try JSONDecoder().decode(EventPush.self, from: tick)
        } throws: { error in
            (error as? DecodingError)?.summary == "type: expected 'event', found 'tick'"
        }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(ByePush.self, from: tick) }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(TickPush<JSONValue>.self, from: Data(#"{"type":"bye","reason":"idle_timeout"}"#.utf8)) }
    }
}
