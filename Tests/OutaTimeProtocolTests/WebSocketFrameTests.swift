import OutaTimeProtocol
import OutaTimeTestKit
import Testing

/// The frame encoder and the masking: header forms, masking in pieces and
/// word-at-a-time against the byte rule, Close frames with long reasons.
@Suite("WebSocket frames")
struct WebSocketFrameTests {
    @Test("writeHeader writes FIN, the opcode, the shortest length and the mask key")
    func header() {
        var buffer = [UInt8](repeating: 0xEE, count: 14)
        let written = buffer.withUnsafeMutableBytes {
            WebSocketFrame.writeHeader(opcode: .text, payloadCount: 300, mask: 0x0102_0304, into: $0)
        }
        #expect(written == 8)
        #expect(Array(buffer[..<8]) == [0x81, 0xFE, 0x01, 0x2C, 0x01, 0x02, 0x03, 0x04])
        let close = buffer.withUnsafeMutableBytes {
            WebSocketFrame.writeHeader(opcode: .close, payloadCount: 2, mask: nil, into: $0)
        }
        #expect(close == 2 && buffer[0] == 0x88 && buffer[1] == 0x02)
    }

    @Test("masking eight bytes at a time equals the byte rule, from any phase and length", arguments: 0..<4)
    func maskingMatchesBytewise(phase: Int) {
        var generator = SeededGenerator(seed: UInt64(phase))
        for length in [0, 1, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000] {
            let key = UInt32.random(in: 0...UInt32.max, using: &generator)
            let keyBytes = WebSocketMask.bytes(of: key)
            let input = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let expected = input.enumerated().map { $0.element ^ keyBytes[($0.offset + phase) % 4] }
            var output = input
            let next = output.withUnsafeMutableBytes { WebSocketMask.apply(key: key, phase: phase, to: $0) }
            #expect(output == expected, "length \(length) phase \(phase)")
            #expect(next == (phase + length) % 4)
            // Masking again restores the input.
            output.withUnsafeMutableBytes { _ = WebSocketMask.apply(key: key, phase: phase, to: $0) }
            #expect(output == input)
        }
    }

    @Test("a payload masked in pieces equals it masked at once")
    func maskingInPieces() {
        let input = (0..<100).map { UInt8($0) }
        let key: UInt32 = 0x37FA_213D
        var whole = input
        whole.withUnsafeMutableBytes { _ = WebSocketMask.apply(key: key, to: $0) }
        var pieces = input
        pieces.withUnsafeMutableBytes { all in
            var phase = 0
            for range in [0..<3, 3..<13, 13..<14, 14..<100] {
                phase = WebSocketMask.apply(key: key, phase: phase, to: UnsafeMutableRawBufferPointer(rebasing: all[range]))
            }
        }
        #expect(pieces == whole)
    }

    @Test("a Close frame: code then reason; a long reason is cut to 123 bytes on a character boundary")
    func closeFrames() {
        #expect(WebSocketFrame.close(code: .messageTooBig, reason: "big") == [0x88, 0x05, 0x03, 0xF1] + Array("big".utf8))
        // 60 two-byte characters: 120 bytes fit; 62 (124 bytes) are cut to 61 (122 bytes).
        let long = String(repeating: "é", count: 62)
        let frame = WebSocketFrame.close(code: .normal, reason: long)
        #expect(frame.count == 2 + 2 + 122)
        #expect(webSocketEvents(frame, masked: false) == [.close(code: 1000, reason: String(repeating: "é", count: 61))])
        // ASCII fills all 123 bytes; the whole frame is the 125-byte control maximum.
        let ascii = WebSocketFrame.close(code: .normal, reason: String(repeating: "x", count: 500))
        #expect(ascii.count == 2 + 125)
        // A 4-byte character straddling byte 123 is left out whole.
        let straddle = String(repeating: "x", count: 121) + "𝄞"
        #expect(WebSocketFrame.truncatedReason(straddle) == Array(repeating: UInt8(ascii: "x"), count: 121))
        #expect(WebSocketFrame.truncatedReason(String(repeating: "x", count: 119) + "𝄞") == Array((String(repeating: "x", count: 119) + "𝄞").utf8))
    }

    @Test("close codes allowed on the wire")
    func allowedCodes() {
        let allowed = (0...5000).filter { WebSocketCloseCode(rawValue: UInt16($0)).isAllowedOnTheWire }
        #expect(allowed == Array(1000...1003) + Array(1007...1014) + Array(3000...4999))
    }
}
