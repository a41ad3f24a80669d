import OutaTimeProtocol

/// The WebSocket decoder against a plain reading of the same stream.
///
/// Input: one byte of settings (bit 0: the server side, frames must be
/// masked; bits 1–3 choose `maxMessageBytes`), one byte `k` (0–7) and `k`
/// chunk sizes (0–255; 0 appends nothing), then the stream. Fed in chunks of
/// those sizes (cycled), draining after each, the decoder must give exactly
/// the events a plain reading of the whole stream gives (``reference(_:masked:max:)``,
/// written from RFC 6455 §5 without the decoder's code paths, its UTF-8
/// judged by `String(validating:)`); a 1009 comes at the header; the bytes
/// held never exceed one frame in progress plus the message so far; after a
/// Close or a failure nothing more comes out; `feed` in the same chunks
/// gives the same events. Every text message, written
/// back by the encoder as one frame and as fragments, reads back the same.
enum WebSocketChecks {
    static let maxMessages = [0, 1, 5, 125, 126, 1000, 65536, 1 << 20]

    static func check(_ input: UnsafeRawBufferPointer) throws(FuzzFailure) {
        var bytes = FuzzBytes(input)
        let settings = bytes.byte()
        let masked = settings & 1 != 0
        let max = maxMessages[Int(settings >> 1) & 7]
        let sizes = (0..<bytes.choice(8)).map { _ in Int(bytes.byte()) }
        let stream = Array(bytes.remaining)
        let expected = reference(stream, masked: masked, max: max)

        var decoder = WebSocketDecoder(maxMessageBytes: max, requireMasked: masked)
        var events: [WebSocketEvent] = []
        var offset = 0
        var turn = 0
        while offset < stream.count {
            let size = sizes.isEmpty ? stream.count : sizes[turn % sizes.count]
            turn += 1
            if turn > 4 * stream.count + 8 { break }  // only empty chunks
            let end = min(stream.count, offset + size)
            decoder.append(stream[offset..<end])
            offset = end
            while let event = decoder.next() { events.append(event) }
            let bound = Swift.max(max, 125) * 2 + 14
            guard decoder.bufferedByteCount <= bound else {
                throw FuzzFailure(.websocket, "\(decoder.bufferedByteCount) bytes held after draining, bound \(bound)")
            }
        }
        if offset < stream.count {
            decoder.append(stream[offset...])
            while let event = decoder.next() { events.append(event) }
        }
        guard same(events, expected) else {
            throw FuzzFailure(.websocket, "masked \(masked), max \(max), chunks \(sizes): decoded \(describe(events)), expected \(describe(expected))")
        }
        // `feed` (the client's path: whole frames in place, split ones
        // buffered a frame at a time) in the same chunks: the same events.
        var fed = WebSocketDecoder(maxMessageBytes: max, requireMasked: masked)
        var fedEvents: [WebSocketEvent] = []
        offset = 0
        turn = 0
        while offset < stream.count {
            let size = sizes.isEmpty || turn > 4 * stream.count + 8 ? stream.count : sizes[turn % sizes.count]
            turn += 1
            let end = min(stream.count, offset + size)
            stream[offset..<end].withUnsafeBytes { chunk in
                fed.feed(chunk, onText: { fedEvents.append(.text(Array($0))) }, onEvent: { fedEvents.append($0) })
            }
            offset = end
        }
        guard same(fedEvents, expected) else {
            throw FuzzFailure(.websocket, "masked \(masked), max \(max), chunks \(sizes): fed \(describe(fedEvents)), expected \(describe(expected))")
        }
        if let last = events.last, last.ends {
            decoder.append([0x81, 0x00, 0x81, 0x80, 0, 0, 0, 0])
            guard decoder.next() == nil else { throw FuzzFailure(.websocket, "an event after \(last)") }
        }
        for case .text(let text) in events { try roundTrip(text, masked: masked, max: max) }
    }

    /// Equal events; failures compare by code only (the messages are the decoder's prose).
    static func same(_ left: [WebSocketEvent], _ right: [WebSocketEvent]) -> Bool {
        left.count == right.count && zip(left, right).allSatisfy { pair in
            if case .failure(let a) = pair.0, case .failure(let b) = pair.1 { return a.code == b.code }
            return pair.0 == pair.1
        }
    }

    /// A text message encoded as one frame, and as two fragments with a Ping
    /// between them, decodes to itself.
    static func roundTrip(_ text: [UInt8], masked: Bool, max: Int) throws(FuzzFailure) {
        let mask: UInt32? = masked ? 0x1234_5678 : nil
        var whole = WebSocketDecoder(maxMessageBytes: max, requireMasked: masked)
        whole.append(WebSocketFrame.encode(opcode: .text, payload: text, mask: mask))
        guard whole.next() == .text(text) else { throw FuzzFailure(.websocket, "\(text.count) text bytes did not read back") }
        let cut = text.count / 2
        var first = WebSocketFrame.encode(opcode: .text, payload: text[..<cut], mask: mask)
        first[0] &= 0x7F
        let ping = WebSocketFrame.encode(opcode: .ping, payload: [1, 2], mask: mask)
        let last = WebSocketFrame.encode(opcode: .continuation, payload: text[cut...], mask: mask)
        var fragments = WebSocketDecoder(maxMessageBytes: max, requireMasked: masked)
        fragments.append(first + ping + last)
        let got = [fragments.next(), fragments.next()]
        guard got == [.ping([1, 2]), .text(text)] else {
            throw FuzzFailure(.websocket, "\(text.count) text bytes cut at \(cut) read back as \(got)")
        }
    }

    // MARK: The plain reading

    /// The events of `stream` read whole, frame by frame.
    static func reference(_ stream: [UInt8], masked: Bool, max: Int) -> [WebSocketEvent] {
        var events: [WebSocketEvent] = []
        var offset = 0
        var message: [UInt8]?
        func fail(_ code: WebSocketCloseCode) -> [WebSocketEvent] { events + [.failure(WebSocketFailure(code, ""))] }
        while true {
            let rest = stream.count - offset
            guard rest >= 2 else { return events }
            let b0 = stream[offset], b1 = stream[offset + 1]
            let fin = b0 & 0x80 != 0, opcode = b0 & 0x0F, hasMask = b1 & 0x80 != 0
            if b0 & 0x70 != 0 || ![0, 1, 2, 8, 9, 10].contains(opcode) { return fail(.protocolError) }
            var length = UInt64(b1 & 0x7F)
            var header = 2
            if length == 126 {
                guard rest >= 4 else { return events }
                length = UInt64(stream[offset + 2]) << 8 | UInt64(stream[offset + 3])
                header = 4
            } else if length == 127 {
                guard rest >= 10 else { return events }
                length = stream[offset + 2..<offset + 10].reduce(0) { $0 << 8 | UInt64($1) }
                header = 10
                if length >= 1 << 63 { return fail(.protocolError) }
            }
            var key: [UInt8] = []
            if hasMask {
                guard rest >= header + 4 else { return events }
                key = Array(stream[offset + header..<offset + header + 4])
                header += 4
            }
            if hasMask != masked { return fail(.protocolError) }
            let control = opcode >= 8
            if control && (!fin || length > 125) { return fail(.protocolError) }
            if opcode == 2 { return fail(.unsupportedData) }
            if opcode == 0 && message == nil { return fail(.protocolError) }
            if opcode == 1 && message != nil { return fail(.protocolError) }
            if !control && UInt64(message?.count ?? 0) + length > UInt64(max) { return fail(.messageTooBig) }
            guard UInt64(rest - header) >= length else { return events }
            var payload = Array(stream[offset + header..<offset + header + Int(length)])
            if hasMask { for index in payload.indices { payload[index] ^= key[index % 4] } }
            offset += header + Int(length)
            switch opcode {
            case 9: events.append(.ping(payload))
            case 10: events.append(.pong(payload))
            case 8:
                if payload.isEmpty { return events + [.close(code: nil, reason: "")] }
                if payload.count == 1 { return fail(.protocolError) }
                let code = UInt16(payload[0]) << 8 | UInt16(payload[1])
                if !(1000...1003 ~= code || 1007...1014 ~= code || 3000...4999 ~= code) { return fail(.protocolError) }
                guard let reason = String(validating: payload[2...], as: UTF8.self) else { return fail(.invalidPayload) }
                return events + [.close(code: code, reason: reason)]
            default:
                let joined = (message ?? []) + payload
                if fin {
                    if String(validating: joined, as: UTF8.self) == nil { return fail(.invalidPayload) }
                    events.append(.text(joined))
                    message = nil
                } else {
                    if !canComplete(joined) { return fail(.invalidPayload) }
                    message = joined
                }
            }
        }
    }

    /// Whether some continuation makes `bytes` valid UTF-8: valid now, or
    /// valid without its last 1–3 bytes and those start a character.
    static func canComplete(_ bytes: [UInt8]) -> Bool {
        if String(validating: bytes, as: UTF8.self) != nil { return true }
        for tail in 1...3 where bytes.count >= tail {
            guard String(validating: bytes.dropLast(tail), as: UTF8.self) != nil else { continue }
            let start = Array(bytes.suffix(tail))
            // The second byte of a character has the narrowest range
            // (E0: A0–BF, ED: 80–9F, F0: 90–BF, F4: 80–8F); later ones are 80–BF.
            for second: UInt8 in [0x80, 0x90, 0xA0, 0xBF] {
                for total in (tail + 1)...4 {
                    var candidate = start
                    while candidate.count < total { candidate.append(candidate.count == 1 ? second : 0x80) }
                    if String(validating: candidate, as: UTF8.self) != nil { return true }
                }
            }
        }
        return false
    }

    static func describe(_ events: [WebSocketEvent]) -> String {
        let shown = events.prefix(6).map { event -> String in
            switch event {
            case .text(let bytes): "text(\(bytes.count))"
            case .ping(let bytes): "ping(\(bytes.count))"
            case .pong(let bytes): "pong(\(bytes.count))"
            case .close(let code, let reason): "close(\(code.map(String.init) ?? "-"), \(reason.utf8.count))"
            case .failure(let failure): "failure(\(failure.code))"
            }
        }
        return "\(events.count) events \(shown)"
    }
}

extension WebSocketEvent {
    /// A Close or a failure: the decoder yields nothing after it.
    var ends: Bool {
        switch self {
        case .close, .failure: true
        default: false
        }
    }
}
