/// The fixed part of a frame (RFC 6455 §5.2): FIN, RSV, opcode, MASK, the
/// 7-, 16- or 64-bit payload length and the masking key.
struct WebSocketFrameHeader {
    var fin: Bool
    var opcode: WebSocketOpcode
    /// The masking key, when the MASK bit is set.
    var mask: UInt32?
    var payloadLength: UInt64
    /// Header bytes: 2, 4 or 10, plus 4 with a mask.
    var size: Int

    enum Parsed {
        case needMore
        case header(WebSocketFrameHeader)
        case failed(WebSocketFailure)
    }

    /// Reads the header at the start of `input`. RSV bits, reserved opcodes
    /// and a 64-bit length with its top bit fail here; the rest of the rules
    /// need the decoder's state.
    static func parse(_ input: UnsafeRawBufferPointer) -> Parsed {
        guard input.count >= 2 else { return .needMore }
        let first = input[0], second = input[1]
        if first & 0x70 != 0 {
            return .failed(WebSocketFailure(.protocolError,
                "RSV bits 0x\(String(first & 0x70, radix: 16)) set in a frame header; no extension was negotiated, so they must be 0"))
        }
        guard let opcode = WebSocketOpcode(rawValue: first & 0x0F) else {
            return .failed(WebSocketFailure(.protocolError,
                "reserved opcode \(first & 0x0F); allowed: 0 (continuation), 1 (text), 2 (binary), 8 (close), 9 (ping), 10 (pong)"))
        }
        let masked = second & 0x80 != 0
        var size = 2
        var length = UInt64(second & 0x7F)
        if length == 126 {
            guard input.count >= 4 else { return .needMore }
            length = UInt64(input[2]) << 8 | UInt64(input[3])
            size = 4
        } else if length == 127 {
            guard input.count >= 10 else { return .needMore }
            length = UInt64(bigEndian: input.loadUnaligned(fromByteOffset: 2, as: UInt64.self))
            size = 10
            if length >> 63 != 0 {
                return .failed(WebSocketFailure(.protocolError,
                    "a 64-bit payload length with its most significant bit set (\(length)); it must be 0"))
            }
        }
        var mask: UInt32?
        if masked {
            guard input.count >= size + 4 else { return .needMore }
            mask = UInt32(bigEndian: input.loadUnaligned(fromByteOffset: size, as: UInt32.self))
            size += 4
        }
        return .header(WebSocketFrameHeader(fin: first & 0x80 != 0, opcode: opcode, mask: mask,
                                            payloadLength: length, size: size))
    }
}

extension WebSocketOpcode: CustomStringConvertible {
    /// The name, e.g. `ping`.
    public var description: String {
        switch self {
        case .continuation: "continuation"
        case .text: "text"
        case .binary: "binary"
        case .close: "close"
        case .ping: "ping"
        case .pong: "pong"
        }
    }
}
