import Foundation
import OutaTimeProtocol
import Testing

/// ``RawJSON``: text encoded once and written verbatim into later messages.
@Suite("RawJSON")
struct RawJSONTests {
    @Test("an event push with raw data carries the text byte for byte, and reads as the same push")
    func verbatimInPush() throws {
        let data = try RawJSON(encoding: ["b": 1, "a": 2] as [String: Int])
        let push = EventMessage(channel: "timers/a", seq: 4, event: "timer_removed", data: data, at: "1985-10-26T01:21:00Z")
        let text = try MessageEncoder().text(push)
        #expect(text.contains(#""data":\#(data.text),"at""#))
        let read = try JSONDecoder().decode(EventPush.self, from: Data(text.utf8))
        #expect(read == EventPush(channel: "timers/a", seq: 4, event: "timer_removed", data: try data.value(),
                                  at: "1985-10-26T01:21:00Z"))
    }

    @Test("Foundation's encoder writes the value the text holds")
    func foundation() throws {
        let raw = RawJSON(validJSON: #"{"id":3,"tags":["x",null],"ok":true}"#)
        let viaFoundation = try JSONValue.parse(try JSONEncoder().encode(raw))
        #expect(viaFoundation == (try raw.value()))
        #expect(try JSONDecoder().decode(RawJSON.self, from: Data(raw.text.utf8)).value() == (try raw.value()))
    }
}
