import Foundation
import Testing
import OutaTimeProtocol

extension Frame {
    /// Copies of the frame's bytes and body, read while the frame is alive.
    var byteArray: [UInt8] { withUnsafeBytes { Array($0) } }
    var bodyArray: [UInt8] { withExtendedLifetime(self) { Array(body) } }
}

@Suite("Frame and MessageEncoder")
struct FrameTests {
    @Test("the header is the big-endian body length, followed by the body", arguments: [0, 2, 255, 256, 300, 70_000])
    func headerAndBody(length: Int) {
        let frameBody = body(length)
        let frame = Frame(body: frameBody)
        #expect(frame.count == length + 4)
        #expect(frame.byteArray == header(UInt32(length)) + frameBody)
        #expect(frame.bodyArray == frameBody)
    }

    @Test("300 bytes give the header 00 00 01 2C")
    func explicitHeaderBytes() {
        let frame = Frame(body: [UInt8](repeating: 0x41, count: 300))
        #expect(Array(frame.byteArray.prefix(4)) == [0x00, 0x00, 0x01, 0x2C])
    }

    @Test("every initializer produces the same bytes")
    func initializersAgree() {
        let frameBody = Array(#"{"type":"ping"}"#.utf8)
        let expected = wire(frameBody)
        let fromRaw = frameBody.withUnsafeBytes { Frame(body: $0) }
        #expect(fromRaw.byteArray == expected)
        #expect(Frame(body: frameBody).byteArray == expected)
        #expect(Frame(body: Data(frameBody)).byteArray == expected)
        #expect(Frame(body: ([0xFF] + frameBody).dropFirst()).byteArray == expected)
    }

    @Test("the bytes keep a stable address, and the body follows the header in the same block")
    func stableStorage() {
        let frame = Frame(body: body(10))
        withExtendedLifetime(frame) {
            #expect(frame.bytes.baseAddress == frame.bytes.baseAddress)
            #expect(frame.body.baseAddress == frame.bytes.baseAddress! + 4)
        }
    }

    @Test("a frame's bytes decode back to its body")
    func roundTripThroughDecoder() {
        let frameBody = body(40)
        let frame = Frame(body: frameBody)
        var decoder = FrameDecoder(maxFrame: 64)
        var delivered: [[UInt8]] = []
        frame.withUnsafeBytes { bytes in
            try? decoder.feed(bytes) { delivered.append(Array($0)) }
        }
        #expect(delivered == [frameBody])
    }

    @Test("the encoder writes compact JSON with '/' unescaped")
    func encoderBody() throws {
        let encoder = MessageEncoder()
        let text = String(decoding: try encoder.body(TickPush<JSONValue>(channel: "laps/track-1", data: .object([:]))), as: UTF8.self)
        #expect(text.contains(#""channel":"laps/track-1""#))
        #expect(!text.contains("\\/"))
        #expect(!text.contains("\n"))
    }

    @Test("frame(_:) is the encoded body behind a length header")
    func encoderFrame() throws {
        let frame = try MessageEncoder().frame(ByePush(reason: .idleTimeout))
        let frameBody = frame.bodyArray
        #expect(Array(frame.byteArray.prefix(4)) == header(UInt32(frameBody.count)))
        // Key order is not stable across encodes, so compare parsed JSON.
        let object = try JSONSerialization.jsonObject(with: Data(frameBody)) as? [String: String]
        #expect(object == ["type": "bye", "reason": "idle_timeout"])
    }

    @Test("values JSON cannot hold are reported, not crashed on")
    func encoderRejectsNaN() {
        let encoder = MessageEncoder()
        #expect(throws: EncodingError.self) {
            try encoder.frame(TickPush<JSONValue>(channel: "laps/a", data: .double(.nan)))
        }
    }
}
