@testable import OutaTimeCluster
import OutaTimeStore
import Testing

@Suite("JetStreamStore names and payloads")
struct StoreEncodingTests {
    @Test("channel names map to subjects and keys injectively; bad names are refused by name")
    func addresses() throws {
        let address = try ChannelAddress("laps/my.run", partitions: 3)
        #expect(address.key == "laps.my=run")
        #expect(address.subject == "ot.ev.\(address.partition).laps.my=run")
        #expect(address.stream == "OT_EV_\(address.partition)")
        #expect((0..<3).contains(address.partition))
        #expect(ChannelAddress.channel(fromKey: address.key) == "laps/my.run")
        #expect(try ChannelAddress("laps/my=run".replacingOccurrences(of: "=", with: "_"), partitions: 3).key == "laps.my_run")
        // Stable across runs and processes (not `hashValue`).
        #expect(ChannelAddress.fnv1a("laps/a") == 0x4618_08C7)
        #expect(try ChannelAddress("timers/x", partitions: 1).partition == 0)
        for bad in ["laps", "/x", "laps/", "laps/a b", "laps/a*", "laps/>", "Laps/x", "laps/a/b"] {
            let error = #expect(throws: StoreError.self) { try ChannelAddress(bad, partitions: 3) }
            #expect("\(error!)".contains(bad))
        }
        #expect(JetStreamStoreNames.metaKey("last alive") == "last=20alive")
        #expect(JetStreamStoreNames.metaKey("a=b.c") == "a=3Db=2Ec")
    }

    @Test("an event message's JSON round-trips data byte for byte")
    func codecRoundTrip() throws {
        let texts = [
            "{\"s\":\"} ] , \\\" {\",\"n\":[1,{\"x\":null}],\"e\":\"é\\u00e9\"}",
            "[1,2,3]", "\"just a string, with } ]\"", "42", "null", "{}",
        ]
        let events = texts.enumerated().map { index, text in
            EventRecord(channel: "laps/a", seq: Int64(index + 7), event: "name \"\(index)\"\n\u{01}",
                        data: JSONText(text), at: "2026-11-27T20:00:00Z")
        }
        let bytes = EventBatchCodec.encode(events)
        #expect(try EventBatchCodec.decode(bytes, channel: "laps/a") == events)
        #expect(try EventBatchCodec.decode(Array("[]".utf8), channel: "laps/a").isEmpty)
        for bad in ["", "[", "[{\"seq\":x}]", "[{\"seq\":1,\"event\":\"a\",\"at\":\"b\",\"data\":}]", "{}"] {
            #expect(throws: EventBatchCodec.Malformed.self) { try EventBatchCodec.decode(Array(bad.utf8), channel: "laps/a") }
        }
    }
}
