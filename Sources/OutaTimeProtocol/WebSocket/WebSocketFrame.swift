/// Writes WebSocket frames (RFC 6455 §5.2): always whole (FIN set), never
/// with RSV bits, lengths in their shortest form. The server sends its
/// frames unmasked; a client (the load harness, tests) masks each with a
/// fresh random key.
public enum WebSocketFrame {
    /// The most a Close frame's payload may hold (RFC 6455 §5.5): code and reason.
    public static let maxControlPayload = 125

    /// Header bytes for a payload of `payloadCount`: 2 up to 125 bytes, 4 up
    /// to 65,535, else 10; 4 more when `masked`.
    public static func headerSize(payloadCount: Int, masked: Bool) -> Int {
        precondition(payloadCount >= 0, "negative payload length \(payloadCount)")
        let base = payloadCount <= 125 ? 2 : payloadCount <= 0xFFFF ? 4 : 10
        return masked ? base + 4 : base
    }

    /// Writes FIN + opcode and the length (and the mask key when given)
    /// at the start of `into`; returns the bytes written
    /// (``headerSize(payloadCount:masked:)``). The payload, masked by the
    /// caller when `mask` is given, follows.
    ///
    /// - Precondition: `into` holds the header.
    @discardableResult
    public static func writeHeader(
        opcode: WebSocketOpcode, payloadCount: Int, mask: UInt32?,
        into buffer: UnsafeMutableRawBufferPointer
    ) -> Int {
        let size = headerSize(payloadCount: payloadCount, masked: mask != nil)
        precondition(buffer.count >= size, "a \(size)-byte frame header does not fit in \(buffer.count) bytes")
        let maskBit: UInt8 = mask == nil ? 0 : 0x80
        buffer[0] = 0x80 | opcode.rawValue
        var offset = 2
        if payloadCount <= 125 {
            buffer[1] = maskBit | UInt8(payloadCount)
        } else if payloadCount <= 0xFFFF {
            buffer[1] = maskBit | 126
            buffer.storeBytes(of: UInt16(payloadCount).bigEndian, toByteOffset: 2, as: UInt16.self)
            offset = 4
        } else {
            buffer[1] = maskBit | 127
            buffer.storeBytes(of: UInt64(payloadCount).bigEndian, toByteOffset: 2, as: UInt64.self)
            offset = 10
        }
        if let mask {
            buffer.storeBytes(of: mask.bigEndian, toByteOffset: offset, as: UInt32.self)
            offset += 4
        }
        return offset
    }

    /// One whole frame: header and payload (masked with `mask` when given).
    public static func encode(opcode: WebSocketOpcode, payload: some Collection<UInt8>, mask: UInt32? = nil) -> [UInt8] {
        let count = payload.count
        let header = headerSize(payloadCount: count, masked: mask != nil)
        return [UInt8](unsafeUninitializedCapacity: header + count) { out, written in
            let raw = UnsafeMutableRawBufferPointer(out)
            writeHeader(opcode: opcode, payloadCount: count, mask: mask, into: raw)
            let body = UnsafeMutableRawBufferPointer(rebasing: raw[header...])
            if payload.withContiguousStorageIfAvailable({ body.copyMemory(from: UnsafeRawBufferPointer($0)) }) == nil {
                _ = UnsafeMutableBufferPointer<UInt8>(rebasing: out[header...]).initialize(from: payload)
            }
            if let mask { WebSocketMask.apply(key: mask, to: body) }
            written = header + count
        }
    }

    /// A Close frame with `code` and `reason`, the reason cut at a character
    /// boundary to fit the 125-byte control payload (123 bytes after the code).
    public static func close(code: WebSocketCloseCode, reason: String, mask: UInt32? = nil) -> [UInt8] {
        var payload: [UInt8] = [UInt8(code.rawValue >> 8), UInt8(truncatingIfNeeded: code.rawValue)]
        payload += truncatedReason(reason)
        return encode(opcode: .close, payload: payload, mask: mask)
    }

    /// The UTF-8 of `reason`, cut to at most 123 bytes without splitting a character.
    public static func truncatedReason(_ reason: String) -> [UInt8] {
        let bytes = Array(reason.utf8)
        let limit = maxControlPayload - 2
        guard bytes.count > limit else { return bytes }
        // Back off from the cut to the start of the character it falls in
        // (continuation bytes are 10xxxxxx).
        var cut = limit
        while cut > 0 && bytes[cut] & 0xC0 == 0x80 { cut -= 1 }
        return Array(bytes[..<cut])
    }
}
