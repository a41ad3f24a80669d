/// Reads WebSocket frames (RFC 6455 §5) from a byte stream, incrementally:
/// ``append(_:)`` what the socket read, then call ``next()`` until it
/// returns nil (it needs more bytes). Any split of the input gives the same
/// events.
///
/// It checks every framing rule and joins fragments: a text message comes
/// out whole, checked as UTF-8 as its fragments arrive (a character split
/// across two fragments is fine). Pings, Pongs and a Close may arrive
/// between the fragments of a message and come out at once. The first
/// broken rule ends the stream with ``WebSocketEvent/failure(_:)``, whose
/// code the Close frame answering it carries:
/// - 1003: a binary message (OutaTime speaks text only);
/// - 1007: a text message or Close reason that is not UTF-8;
/// - 1009: a message over `maxMessageBytes`, all fragments together,
///   refused at the frame header, before its payload is buffered;
/// - 1002: everything else (an unmasked client frame or a masked server
///   frame, RSV bits without an extension, a reserved opcode, a control
///   frame over 125 bytes or fragmented, a continuation with no message in
///   progress, a new message inside a fragmented one, a Close payload of 1
///   byte or with a code not allowed on the wire, a 64-bit length with its
///   top bit set).
/// Lengths need not use the shortest form (the RFC says they must, but
/// nothing is gained by refusing a 16-bit length of 5).
///
/// Memory: the bytes appended and not yet decoded, at most one frame plus
/// what came after it in the same read, and the fragments of the message
/// in progress; both are released when emptied, so an idle connection
/// holds no buffer.
public struct WebSocketDecoder: Sendable {
    /// The longest message accepted, in payload bytes (all fragments).
    public let maxMessageBytes: Int
    /// True on the server: every frame must be masked. False in a client:
    /// no frame may be.
    public let requireMasked: Bool

    /// Bytes appended and not yet decoded start at `start`.
    private var buffer: [UInt8] = []
    private var start = 0
    /// The fragments so far of a text message in progress (unmasked).
    private var message: [UInt8] = []
    /// True between a non-final text frame and its final continuation.
    private var inMessage = false
    /// How many bytes at the start of `message` are whole, valid UTF-8.
    private var validated = 0
    /// True after a Close or a failure: nothing more comes out.
    private var isFinished = false

    /// A decoder for one connection. `requireMasked`: true on the server
    /// (client frames must be masked), false in clients (server frames
    /// must not be). Messages longer than `maxMessageBytes` fail with 1009.
    public init(maxMessageBytes: Int, requireMasked: Bool) {
        precondition(maxMessageBytes >= 0, "maxMessageBytes must be ≥ 0, got \(maxMessageBytes)")
        self.maxMessageBytes = maxMessageBytes
        self.requireMasked = requireMasked
    }

    /// Bytes appended and not yet decoded, plus the fragments held.
    public var bufferedByteCount: Int { buffer.count - start + message.count }

    /// Queues `bytes` for decoding (copied). Call ``next()`` until nil afterwards.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard !isFinished, !bytes.isEmpty else { return }
        if start > 0 {
            // Drop what was decoded; what is left is a frame's beginning.
            buffer.removeSubrange(0..<start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Queues `bytes` for decoding.
    public mutating func append(_ bytes: some Collection<UInt8>) {
        let done: Void? = bytes.withContiguousStorageIfAvailable { append(UnsafeRawBufferPointer($0)) }
        if done == nil { Array(bytes).withUnsafeBytes { append($0) } }
    }

    /// The next event, or nil when more bytes are needed (or after a Close
    /// or a failure, which end the stream).
    public mutating func next() -> WebSocketEvent? {
        guard !isFinished else { return nil }
        while true {
            let available = buffer.count - start
            // A second reference to the bytes, so that decoding may mutate
            // `self` while reading them (no copy: nothing writes `buffer`
            // until `input` is gone).
            let input = buffer
            let step: Step = input.withUnsafeBytes { all in
                decodeFrame(UnsafeRawBufferPointer(rebasing: all[start..<start + available]))
            }
            switch step {
            case .needMore:
                release()
                return nil
            case .consumed(let count, let event):
                start += count
                if start == buffer.count { release() }
                if let event {
                    if case .close = event { finish() }
                    return event
                }
                // A non-final fragment: look at the next frame.
            case .failed(let failure):
                finish()
                return .failure(failure)
            }
        }
    }

    /// Decodes `chunk` and hands out what it holds, in order: each text
    /// message to `onText` (its bytes valid only during the call), every
    /// other event to `onEvent`. Returns false once the stream has ended (a
    /// Close or a failure went to `onEvent`).
    ///
    /// Whole unmasked text frames lying inside `chunk` (what a client
    /// reads from a server) are passed in place, without a copy, while
    /// nothing is buffered; everything else goes through ``append(_:)`` and
    /// ``next()``. Same events as those, for any split of the input.
    @discardableResult
    public mutating func feed(
        _ chunk: UnsafeRawBufferPointer,
        onText: (UnsafeRawBufferPointer) -> Void,
        onEvent: (WebSocketEvent) -> Void
    ) -> Bool {
        var offset = 0
        while !isFinished && offset < chunk.count {
            if requireMasked {
                // Masked frames are unmasked into a copy anyway.
                append(UnsafeRawBufferPointer(rebasing: chunk[offset...]))
                offset = chunk.count
            } else {
                if start == buffer.count && !inMessage {
                    offset = deliverInPlace(chunk, from: offset, onText)
                    if offset == chunk.count { break }
                }
                // A frame the fast path cannot take, or one split by the
                // read: buffer only the bytes it still needs, so that the
                // rest of the chunk can go in place again.
                let take = max(1, min(bytesWanted(), chunk.count - offset))
                append(UnsafeRawBufferPointer(rebasing: chunk[offset..<offset + take]))
                offset += take
            }
            while let event = next() {
                if case .text(let bytes) = event {
                    bytes.withUnsafeBytes { onText($0) }
                } else {
                    onEvent(event)
                }
            }
        }
        return !isFinished
    }

    /// Passes whole unmasked, unfragmented, valid text frames at
    /// `chunk[offset...]` to `onText` in place; returns the offset of the
    /// first frame it did not take.
    private func deliverInPlace(
        _ chunk: UnsafeRawBufferPointer, from start: Int, _ onText: (UnsafeRawBufferPointer) -> Void
    ) -> Int {
        var offset = start
        while offset < chunk.count {
            let rest = UnsafeRawBufferPointer(rebasing: chunk[offset...])
            guard case .header(let header) = WebSocketFrameHeader.parse(rest),
                  header.mask == nil, header.fin, header.opcode == .text,
                  header.payloadLength <= UInt64(maxMessageBytes),
                  UInt64(rest.count - header.size) >= header.payloadLength else { break }
            let payload = UnsafeRawBufferPointer(rebasing: rest[header.size..<header.size + Int(header.payloadLength)])
            // Invalid UTF-8 takes the slow path, which reports it.
            guard case .success = Self.utf8Prefix(payload, final: true) else { break }
            onText(payload)
            offset += header.size + payload.count
        }
        return offset
    }

    /// How many more bytes the frame at the front of the buffer needs before
    /// ``next()`` can decide on it (its header first, then its payload).
    private func bytesWanted() -> Int {
        let held = buffer.count - start
        guard held >= 2 else { return 2 - held }
        let second = buffer[start + 1]
        let length7 = second & 0x7F
        let headerSize = 2 + (length7 == 126 ? 2 : length7 == 127 ? 8 : 0) + (second & 0x80 != 0 ? 4 : 0)
        guard held >= headerSize else { return headerSize - held }
        let input = buffer
        let parsed = input.withUnsafeBytes { WebSocketFrameHeader.parse(UnsafeRawBufferPointer(rebasing: $0[start...])) }
        guard case .header(let header) = parsed else { return 1 }
        let total = UInt64(header.size) + header.payloadLength
        return total > UInt64(held) ? Int(min(total - UInt64(held), UInt64(Int.max))) : 1
    }

    /// What one frame at the front of the buffer amounts to.
    private enum Step {
        case needMore
        /// `count` bytes used; the event, or nil for a fragment that
        /// completes no message.
        case consumed(Int, WebSocketEvent?)
        case failed(WebSocketFailure)
    }

    private mutating func decodeFrame(_ input: UnsafeRawBufferPointer) -> Step {
        let header: WebSocketFrameHeader
        switch WebSocketFrameHeader.parse(input) {
        case .needMore: return .needMore
        case .failed(let failure): return .failed(failure)
        case .header(let parsed): header = parsed
        }
        if let failure = check(header) { return .failed(failure) }
        let length = Int(header.payloadLength)
        guard input.count - header.size >= length else { return .needMore }
        let payload = UnsafeRawBufferPointer(rebasing: input[header.size..<header.size + length])
        switch header.opcode {
        case .text where header.fin:
            let text = unmasked(payload, header.mask)
            if let error = Self.utf8Error(text, final: true) {
                return .failed(WebSocketFailure(.invalidPayload, "the text message is not UTF-8: \(error)"))
            }
            return .consumed(header.size + length, .text(text))
        case .text, .continuation:
            return appendFragment(payload, header: header)
        case .ping:
            return .consumed(header.size + length, .ping(unmasked(payload, header.mask)))
        case .pong:
            return .consumed(header.size + length, .pong(unmasked(payload, header.mask)))
        case .close:
            switch Self.readClose(unmasked(payload, header.mask)) {
            case .success(let event): return .consumed(header.size + length, event)
            case .failure(let failure): return .failed(failure)
            }
        case .binary:
            // Refused at the header by `check`.
            return .failed(Self.binaryRefused)
        }
    }

    /// The rules a header breaks on its own or against the message in progress.
    private func check(_ header: WebSocketFrameHeader) -> WebSocketFailure? {
        if header.mask != nil && !requireMasked {
            return WebSocketFailure(.protocolError, "a server frame is masked; server frames must not be")
        }
        if header.mask == nil && requireMasked {
            return WebSocketFailure(.protocolError, "a client frame is not masked; client frames must be")
        }
        if header.opcode.isControl {
            guard header.fin else {
                return WebSocketFailure(.protocolError, "a fragmented \(header.opcode) frame; control frames must not be fragmented")
            }
            guard header.payloadLength <= 125 else {
                return WebSocketFailure(.protocolError,
                    "a \(header.opcode) frame of \(header.payloadLength) bytes; control frames carry at most 125")
            }
            return nil
        }
        switch header.opcode {
        case .binary:
            return Self.binaryRefused
        case .continuation where !inMessage:
            return WebSocketFailure(.protocolError, "a continuation frame with no fragmented message in progress")
        case .text where inMessage:
            return WebSocketFailure(.protocolError, "a new text frame inside a fragmented message; expected a continuation")
        default:
            break
        }
        let total = UInt64(inMessage ? message.count : 0) + header.payloadLength
        if total > UInt64(maxMessageBytes) {
            return WebSocketFailure(.messageTooBig,
                "a message of \(inMessage ? "at least " : "")\(total) bytes; allowed up to \(maxMessageBytes)")
        }
        return nil
    }

    private static let binaryRefused = WebSocketFailure(.unsupportedData,
        "a binary message; OutaTime speaks text messages only (one JSON frame body each)")

    /// Adds a text fragment or continuation to the message in progress.
    private mutating func appendFragment(_ payload: UnsafeRawBufferPointer, header: WebSocketFrameHeader) -> Step {
        let old = message.count
        if header.opcode == .text {
            inMessage = true
            validated = 0
        }
        message.append(contentsOf: repeatElement(0, count: payload.count))
        message.withUnsafeMutableBytes { all in
            let tail = UnsafeMutableRawBufferPointer(rebasing: all[old...])
            if let key = header.mask {
                WebSocketMask.apply(key: key, phase: 0, from: payload, into: tail)
            } else {
                tail.copyMemory(from: payload)
            }
        }
        // Check the UTF-8 as it arrives (fail fast); a character split at
        // the end of a non-final fragment waits for the next one.
        let unchecked = message.withUnsafeBytes { UnsafeRawBufferPointer(rebasing: $0[validated...]) }
        switch Self.utf8Prefix(unchecked, final: header.fin) {
        case .success(let valid): validated += valid
        case .failure(let error):
            return .failed(WebSocketFailure(.invalidPayload,
                "the text message is not UTF-8: \(error.describe(offset: validated))"))
        }
        guard header.fin else { return .consumed(header.size + payload.count, nil) }
        let whole = message
        message = []
        inMessage = false
        validated = 0
        return .consumed(header.size + payload.count, .text(whole))
    }

    private func unmasked(_ payload: UnsafeRawBufferPointer, _ mask: UInt32?) -> [UInt8] {
        guard let mask else { return Array(payload) }
        return [UInt8](unsafeUninitializedCapacity: payload.count) { out, count in
            WebSocketMask.apply(key: mask, phase: 0, from: payload, into: UnsafeMutableRawBufferPointer(out))
            count = payload.count
        }
    }

    /// Frees the input buffer once everything in it was decoded, so an idle
    /// connection holds nothing.
    private mutating func release() {
        guard start == buffer.count, buffer.capacity > 0 else { return }
        buffer = []
        start = 0
    }

    private mutating func finish() {
        isFinished = true
        buffer = []
        start = 0
        message = []
        inMessage = false
    }
}
