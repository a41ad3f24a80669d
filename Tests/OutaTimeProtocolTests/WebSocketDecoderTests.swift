import OutaTimeProtocol
import OutaTimeTestKit
import Testing

/// Decodes `bytes` in one append with a fresh decoder; every event until it needs more.
func webSocketEvents(_ bytes: [UInt8], masked: Bool, max: Int = 1 << 20) -> [WebSocketEvent] {
    var decoder = WebSocketDecoder(maxMessageBytes: max, requireMasked: masked)
    decoder.append(bytes)
    return decoder.drain()
}

extension WebSocketDecoder {
    /// Every event until it needs more bytes.
    mutating func drain() -> [WebSocketEvent] {
        var events: [WebSocketEvent] = []
        while let event = next() { events.append(event) }
        return events
    }
}

/// The close code of a failure, or nil when the events hold none.
func failureCode(_ events: [WebSocketEvent]) -> UInt16? {
    for case .failure(let failure) in events { return failure.code.rawValue }
    return nil
}

/// A masked client frame (the load harness's and the browser's form).
func clientFrame(_ opcode: WebSocketOpcode, _ payload: [UInt8], fin: Bool = true, mask: UInt32 = 0x37FA_213D) -> [UInt8] {
    var frame = WebSocketFrame.encode(opcode: opcode, payload: payload, mask: mask)
    if !fin { frame[0] &= 0x7F }
    return frame
}

/// The decoder against RFC 6455 §5: the §5.7 examples, lengths at their
/// boundaries, fragments with control frames between them, each failure
/// with its close code, and any split of the input.
@Suite("WebSocket decoder")
struct WebSocketDecoderTests {
    static let hello = Array("Hello".utf8)

    // MARK: RFC 6455 §5.7

    @Test("§5.7: a single-frame unmasked text message (server to client)")
    func unmaskedHello() {
        #expect(webSocketEvents([0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F], masked: false) == [.text(Self.hello)])
        // The same frame at a server, which needs masked frames: 1002.
        #expect(failureCode(webSocketEvents([0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F], masked: true)) == 1002)
    }

    @Test("§5.7: a single-frame masked text message (client to server)")
    func maskedHello() {
        let frame: [UInt8] = [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
        #expect(webSocketEvents(frame, masked: true) == [.text(Self.hello)])
        #expect(clientFrame(.text, Self.hello) == frame)
        // A client must refuse a masked server frame.
        #expect(failureCode(webSocketEvents(frame, masked: false)) == 1002)
    }

    @Test("§5.7: a fragmented unmasked text message, \"Hel\" then \"lo\"")
    func fragmentedHello() {
        let bytes: [UInt8] = [0x01, 0x03, 0x48, 0x65, 0x6C, 0x80, 0x02, 0x6C, 0x6F]
        var decoder = WebSocketDecoder(maxMessageBytes: 100, requireMasked: false)
        decoder.append(Array(bytes[..<5]))
        #expect(decoder.drain() == [])
        #expect(decoder.bufferedByteCount == 3)  // "Hel" held, the input consumed
        decoder.append(Array(bytes[5...]))
        #expect(decoder.drain() == [.text(Self.hello)])
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test("§5.7: an unmasked Ping and a masked Pong, both \"Hello\"")
    func pingPong() {
        #expect(webSocketEvents([0x89, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F], masked: false) == [.ping(Self.hello)])
        let pong: [UInt8] = [0x8A, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
        #expect(webSocketEvents(pong, masked: true) == [.pong(Self.hello)])
        #expect(clientFrame(.pong, Self.hello) == pong)
        #expect(WebSocketFrame.encode(opcode: .ping, payload: Self.hello) == [0x89, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F])
    }

    @Test("§5.7: 256 bytes and 64 KiB of binary in one unmasked frame: the headers; binary is refused with 1003")
    func binaryExamples() {
        let small = WebSocketFrame.encode(opcode: .binary, payload: [UInt8](repeating: 7, count: 256))
        #expect(Array(small.prefix(4)) == [0x82, 0x7E, 0x01, 0x00])
        #expect(small.count == 4 + 256)
        let large = WebSocketFrame.encode(opcode: .binary, payload: [UInt8](repeating: 7, count: 65536))
        #expect(Array(large.prefix(10)) == [0x82, 0x7F, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00])
        #expect(large.count == 10 + 65536)
        // OutaTime speaks text: 1003, known from the header alone.
        #expect(failureCode(webSocketEvents(Array(small.prefix(4)), masked: false)) == 1003)
        #expect(failureCode(webSocketEvents(Array(large.prefix(10)), masked: false)) == 1003)
    }

    // MARK: Lengths

    @Test("7-, 16- and 64-bit lengths at their boundaries, masked and not", arguments: [0, 1, 125, 126, 127, 65535, 65536, 70000])
    func lengths(count: Int) {
        let payload = (0..<count).map { UInt8(ascii: "a") + UInt8($0 % 26) }
        let expectedHeader = count <= 125 ? 2 : count <= 65535 ? 4 : 10
        #expect(WebSocketFrame.headerSize(payloadCount: count, masked: false) == expectedHeader)
        #expect(WebSocketFrame.headerSize(payloadCount: count, masked: true) == expectedHeader + 4)
        let plain = WebSocketFrame.encode(opcode: .text, payload: payload)
        #expect(plain.count == expectedHeader + count)
        #expect(plain[1] == (count <= 125 ? UInt8(count) : count <= 65535 ? 126 : 127))
        #expect(webSocketEvents(plain, masked: false) == [.text(payload)])
        let masked = clientFrame(.text, payload, mask: 0xA1B2_C3D4)
        #expect(masked.count == expectedHeader + 4 + count)
        #expect(masked[1] & 0x80 != 0)
        #expect(webSocketEvents(masked, masked: true) == [.text(payload)])
    }

    @Test("a length in a longer form than needed is accepted (16-bit 5, 64-bit 5)")
    func nonMinimalLengths() {
        #expect(webSocketEvents([0x81, 126, 0, 5] + Self.hello, masked: false) == [.text(Self.hello)])
        #expect(webSocketEvents([0x81, 127, 0, 0, 0, 0, 0, 0, 0, 5] + Self.hello, masked: false) == [.text(Self.hello)])
    }

    @Test("a 64-bit length with its top bit set: 1002")
    func topBitLength() {
        let events = webSocketEvents([0x81, 127, 0x80, 0, 0, 0, 0, 0, 0, 5], masked: false)
        #expect(failureCode(events) == 1002)
    }

    // MARK: Fragments and control frames

    @Test("fragments with a Ping, a Pong and a Close between them: the control frames come out at once")
    func interleaved() {
        var bytes = clientFrame(.text, Array("{\"a\":".utf8), fin: false)
        bytes += clientFrame(.ping, Array("p1".utf8))
        bytes += clientFrame(.continuation, Array("1".utf8), fin: false)
        bytes += clientFrame(.pong, [])
        bytes += clientFrame(.continuation, Array("}".utf8))
        bytes += clientFrame(.text, Array("next".utf8))
        bytes += clientFrame(.text, Array("half".utf8), fin: false)
        bytes += WebSocketFrame.close(code: .goingAway, reason: "bye", mask: 1)
        bytes += clientFrame(.text, Array("after close".utf8))
        #expect(webSocketEvents(bytes, masked: true) == [
            .ping(Array("p1".utf8)), .pong([]), .text(Array("{\"a\":1}".utf8)), .text(Array("next".utf8)),
            .close(code: 1001, reason: "bye"),
        ])
    }

    @Test("empty fragments and an empty message")
    func emptyFragments() {
        var bytes = clientFrame(.text, [], fin: false)
        bytes += clientFrame(.continuation, [], fin: false)
        bytes += clientFrame(.continuation, Self.hello)
        bytes += clientFrame(.text, [])
        #expect(webSocketEvents(bytes, masked: true) == [.text(Self.hello), .text([])])
    }

    @Test("a character split across fragments is valid UTF-8")
    func utf8AcrossFragments() {
        let text = Array("Zeit: 1.21 ⚡️ Gigawatt — Däumling 𝄞".utf8)
        // Every cut point, including inside each multi-byte character.
        for cut in 0...text.count {
            var bytes = clientFrame(.text, Array(text[..<cut]), fin: false)
            bytes += clientFrame(.continuation, Array(text[cut...]))
            #expect(webSocketEvents(bytes, masked: true) == [.text(text)], "cut at \(cut)")
        }
    }

    // MARK: Failures and their close codes

    @Test("1002: each malformed frame", arguments: [
        ("RSV1 set", [0xC1, 0x80, 0, 0, 0, 0]),
        ("RSV3 set", [0x91, 0x80, 0, 0, 0, 0]),
        ("reserved data opcode 3", [0x83, 0x80, 0, 0, 0, 0]),
        ("reserved control opcode 11", [0x8B, 0x80, 0, 0, 0, 0]),
        ("unmasked client frame", [0x81, 0x00]),
        ("fragmented ping", [0x09, 0x80, 0, 0, 0, 0]),
        ("ping of 126 bytes", [0x89, 0xFE, 0, 126, 0, 0, 0, 0] + [UInt8](repeating: 0, count: 126)),
        ("continuation without a message", [0x80, 0x80, 0, 0, 0, 0]),
        ("text frame inside a fragmented message", [0x01, 0x80, 0, 0, 0, 0, 0x81, 0x80, 0, 0, 0, 0]),
        ("close with a 1-byte payload", [0x88, 0x81, 0, 0, 0, 0, 0x03]),
        ("close code 999", [0x88, 0x82, 0, 0, 0, 0, 0x03, 0xE7]),
        ("close code 1005", [0x88, 0x82, 0, 0, 0, 0, 0x03, 0xED]),
        ("close code 1006", [0x88, 0x82, 0, 0, 0, 0, 0x03, 0xEE]),
        ("close code 1015", [0x88, 0x82, 0, 0, 0, 0, 0x03, 0xF7]),
        ("close code 2999", [0x88, 0x82, 0, 0, 0, 0, 0x0B, 0xB7]),
        ("close code 5000", [0x88, 0x82, 0, 0, 0, 0, 0x13, 0x88]),
        ("64-bit length with the top bit", [0x81, 0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0]),
    ] as [(String, [UInt8])])
    func protocolErrors(name: String, bytes: [UInt8]) {
        let events = webSocketEvents(bytes, masked: true)
        #expect(failureCode(events) == 1002, "\(name): \(events)")
        #expect(events.count == 1, "\(name): \(events)")
    }

    @Test("1003: a binary message, at its header")
    func binaryRefused() {
        let events = webSocketEvents(clientFrame(.binary, [1, 2, 3]), masked: true)
        #expect(failureCode(events) == 1003)
        guard case .failure(let failure) = events.first else { return }
        #expect(failure.message.contains("binary"))
    }

    @Test("1007: invalid UTF-8 in a text message, a fragment, the end of a message, or a close reason", arguments: [
        ("overlong", [0x48, 0xC0, 0x80]),
        ("surrogate", [0xED, 0xA0, 0x80]),
        ("above U+10FFFF", [0xF4, 0x90, 0x80, 0x80]),
        ("stray continuation", [0x80]),
        ("truncated at the end", [0x48, 0xE2, 0x82]),
        ("0xFF", [0xFF]),
    ] as [(String, [UInt8])])
    func invalidUTF8(name: String, bytes: [UInt8]) {
        #expect(failureCode(webSocketEvents(clientFrame(.text, bytes), masked: true)) == 1007, "\(name) in one frame")
        // Split into fragments: the final one settles a truncated end.
        var fragmented = clientFrame(.text, Array(bytes.prefix(1)), fin: false)
        fragmented += clientFrame(.continuation, Array(bytes.dropFirst()))
        #expect(failureCode(webSocketEvents(fragmented, masked: true)) == 1007, "\(name) in fragments")
        let close = clientFrame(.close, [0x03, 0xE8] + bytes)
        #expect(failureCode(webSocketEvents(close, masked: true)) == 1007, "\(name) in a close reason")
    }

    @Test("1007 comes as soon as a fragment holds invalid UTF-8, before the message ends")
    func failsFast() {
        let events = webSocketEvents(clientFrame(.text, [0x41, 0xC0, 0x80, 0x41], fin: false), masked: true)
        #expect(failureCode(events) == 1007)
    }

    @Test("1009: a message over the maximum, in one frame or in fragments, refused at the header")
    func tooBig() {
        #expect(webSocketEvents(clientFrame(.text, [UInt8](repeating: 0x41, count: 100)), masked: true, max: 100)
            == [.text([UInt8](repeating: 0x41, count: 100))])
        // Only the header of a 101-byte frame: refused without waiting for the payload.
        let header = Array(clientFrame(.text, [UInt8](repeating: 0x41, count: 101)).prefix(6))
        #expect(failureCode(webSocketEvents(header, masked: true, max: 100)) == 1009)
        // A 2^62-byte header: refused, nothing reserved.
        #expect(failureCode(webSocketEvents([0x81, 0xFF, 0x40, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4], masked: true)) == 1009)
        // 60 + 41 in fragments.
        var fragments = clientFrame(.text, [UInt8](repeating: 0x41, count: 60), fin: false)
        fragments += clientFrame(.continuation, [UInt8](repeating: 0x41, count: 41))
        #expect(failureCode(webSocketEvents(fragments, masked: true, max: 100)) == 1009)
        // Control frames do not count toward a message.
        var withPing = clientFrame(.text, [UInt8](repeating: 0x41, count: 60), fin: false)
        withPing += clientFrame(.ping, [UInt8](repeating: 0x41, count: 100))
        withPing += clientFrame(.continuation, [UInt8](repeating: 0x41, count: 40))
        #expect(failureCode(webSocketEvents(withPing, masked: true, max: 100)) == nil)
    }

    @Test("a valid Close: its code and reason, echoed by the encoder; an empty Close has no code")
    func closeEcho() {
        let events = webSocketEvents(WebSocketFrame.close(code: .normal, reason: "done ✓", mask: 0xDEAD_BEEF), masked: true)
        #expect(events == [.close(code: 1000, reason: "done ✓")])
        // The server's echo, read by a client.
        guard case .close(let code?, let reason) = events.first else { return }
        let echo = WebSocketFrame.close(code: WebSocketCloseCode(rawValue: code), reason: reason)
        #expect(webSocketEvents(echo, masked: false) == [.close(code: 1000, reason: "done ✓")])
        #expect(webSocketEvents(clientFrame(.close, []), masked: true) == [.close(code: nil, reason: "")])
        for allowed: UInt16 in [1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 3000, 4999] {
            let frame = clientFrame(.close, [UInt8(allowed >> 8), UInt8(allowed & 0xFF)])
            #expect(webSocketEvents(frame, masked: true) == [.close(code: allowed, reason: "")])
        }
    }

    @Test("after a failure or a Close, nothing more comes out, and appended bytes are dropped")
    func finished() {
        var decoder = WebSocketDecoder(maxMessageBytes: 100, requireMasked: true)
        decoder.append([0x81, 0x05] + Self.hello)
        #expect(failureCode(decoder.drain()) == 1002)
        decoder.append(clientFrame(.text, Self.hello))
        #expect(decoder.drain() == [])
        #expect(decoder.bufferedByteCount == 0)
    }

    // MARK: Any split

    /// A stream of client frames: text messages of every length class,
    /// fragmented ones with characters split between fragments, Pings and
    /// Pongs between fragments, then a Close.
    static func stream(using generator: inout SeededGenerator) -> (bytes: [UInt8], events: [WebSocketEvent]) {
        let alphabet = Array("ab{}\":, 0é€𝄞".unicodeScalars)
        var bytes: [UInt8] = []
        var events: [WebSocketEvent] = []
        for _ in 0..<40 {
            let length = [0, 5, 125, 126, 300, 65535, 65536][Int.random(in: 0..<7, using: &generator)]
            var text = ""
            while text.utf8.count < length { text.unicodeScalars.append(alphabet.randomElement(using: &generator)!) }
            let utf8 = Array(text.utf8)
            let mask = UInt32.random(in: 0...UInt32.max, using: &generator)
            if Bool.random(using: &generator) || utf8.count < 2 {
                bytes += clientFrame(.text, utf8, mask: mask)
            } else {
                // 2–4 fragments at random byte offsets (inside characters too).
                var cuts = (0..<Int.random(in: 1...3, using: &generator)).map { _ in Int.random(in: 0...utf8.count, using: &generator) }
                cuts.sort()
                var from = 0
                for (index, cut) in (cuts + [utf8.count]).enumerated() {
                    bytes += clientFrame(index == 0 ? .text : .continuation, Array(utf8[from..<cut]), fin: index == cuts.count, mask: mask &+ UInt32(index))
                    from = cut
                    if index < cuts.count && Bool.random(using: &generator) {
                        let payload = (0..<Int.random(in: 0...125, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
                        let ping = Bool.random(using: &generator)
                        bytes += clientFrame(ping ? .ping : .pong, payload, mask: mask)
                        events.append(ping ? .ping(payload) : .pong(payload))
                    }
                }
            }
            events.append(.text(utf8))
        }
        bytes += WebSocketFrame.close(code: .normal, reason: "the end", mask: 42)
        events.append(.close(code: 1000, reason: "the end"))
        return (bytes, events)
    }

    @Test("randomly split reads give the same events as one read (seeded)", arguments: [1, 2, 3, 4])
    func randomSplits(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        let (bytes, expected) = Self.stream(using: &generator)
        #expect(webSocketEvents(bytes, masked: true) == expected)
        for round in 0..<25 {
            var decoder = WebSocketDecoder(maxMessageBytes: 1 << 20, requireMasked: true)
            var events: [WebSocketEvent] = []
            var offset = 0
            while offset < bytes.count {
                // Mostly small pieces (headers split), sometimes large ones.
                let size = Bool.random(using: &generator) ? Int.random(in: 1...16, using: &generator)
                                                          : Int.random(in: 1...100_000, using: &generator)
                let end = min(bytes.count, offset + size)
                decoder.append(Array(bytes[offset..<end]))
                events += decoder.drain()
                offset = end
            }
            #expect(events == expected, "seed \(seed) round \(round)")
            #expect(decoder.bufferedByteCount == 0)
        }
    }

    @Test("one byte at a time gives the same events")
    func byteAtATime() {
        var generator = SeededGenerator(seed: 99)
        var (bytes, expected) = Self.stream(using: &generator)
        // Keep it short: the first frames and the close.
        bytes = Array(bytes.prefix(20_000))
        expected = webSocketEvents(bytes, masked: true)
        var decoder = WebSocketDecoder(maxMessageBytes: 1 << 20, requireMasked: true)
        var events: [WebSocketEvent] = []
        for byte in bytes {
            decoder.append([byte])
            events += decoder.drain()
        }
        #expect(events == expected)
    }

    @Test("an idle decoder holds nothing once a message is out")
    func idleHoldsNothing() {
        var decoder = WebSocketDecoder(maxMessageBytes: 100, requireMasked: true)
        decoder.append(clientFrame(.text, Self.hello) + Array(clientFrame(.text, Self.hello).prefix(3)))
        #expect(decoder.drain() == [.text(Self.hello)])
        #expect(decoder.bufferedByteCount == 3)
        decoder.append(Array(clientFrame(.text, Self.hello).dropFirst(3)))
        #expect(decoder.drain() == [.text(Self.hello)])
        #expect(decoder.bufferedByteCount == 0)
    }
}

/// `feed`, the client's path (whole unmasked frames passed in place), against `append`/`next`.
@Suite("WebSocket decoder feed")
struct WebSocketDecoderFeedTests {
    @Test("server frames fed in random chunks give the events of append/next (seeded)", arguments: [7, 8])
    func feedMatchesNext(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        var bytes: [UInt8] = []
        for index in 0..<300 {
            let length = [0, 3, 64, 125, 126, 700, 70_000][Int.random(in: 0..<7, using: &generator)]
            let text = Array(String(repeating: index % 2 == 0 ? "é" : "x", count: length / 2 + 1).utf8)
            switch Int.random(in: 0..<6, using: &generator) {
            case 0: bytes += WebSocketFrame.encode(opcode: .ping, payload: Array(text.prefix(100)))
            case 1:
                var first = WebSocketFrame.encode(opcode: .text, payload: Array(text.prefix(3)))
                first[0] &= 0x7F
                bytes += first + WebSocketFrame.encode(opcode: .continuation, payload: Array(text.dropFirst(3)))
            default: bytes += WebSocketFrame.encode(opcode: .text, payload: text)
            }
        }
        bytes += WebSocketFrame.encode(opcode: .text, payload: [0xC0, 0x80])  // 1007 ends it
        let expected = webSocketEvents(bytes, masked: false)
        #expect(failureCode(expected) == 1007)
        for _ in 0..<10 {
            var decoder = WebSocketDecoder(maxMessageBytes: 1 << 20, requireMasked: false)
            var events: [WebSocketEvent] = []
            var offset = 0
            while offset < bytes.count {
                let end = min(bytes.count, offset + Int.random(in: 1...20_000, using: &generator))
                Array(bytes[offset..<end]).withUnsafeBytes { chunk in
                    decoder.feed(chunk, onText: { events.append(.text(Array($0))) }, onEvent: { events.append($0) })
                }
                offset = end
            }
            #expect(events == expected)
        }
    }
}
