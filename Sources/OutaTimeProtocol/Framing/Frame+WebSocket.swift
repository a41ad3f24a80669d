/// One protocol frame's body as a WebSocket text message: an unfragmented,
/// unmasked RFC 6455 frame (FIN, opcode 1, the 7/16/64-bit length), then
/// the body. What a server queues to a connection that came through
/// `GET /ws` in place of the length-prefixed ``Frame`` (protocol
/// "WebSocket transport": one text message is one frame body).
///
/// Like ``Frame``, one heap block written once in `init` and never again,
/// so the same object can sit in many sockets' output queues at once.
/// `@unchecked Sendable` for the same reasons as ``Frame``.
public final class WebSocketMessage: @unchecked Sendable {
    /// Header and body, `count` bytes; owned by this message.
    private let storage: UnsafeMutableRawPointer

    /// Total size in bytes: WebSocket header plus body.
    public let count: Int

    /// Copies `body` behind a WebSocket text-frame header.
    public init(body: UnsafeRawBufferPointer) {
        let headerCount = WebSocketFrame.headerSize(payloadCount: body.count, masked: false)
        count = headerCount + body.count
        storage = UnsafeMutableRawPointer.allocate(byteCount: max(count, 1), alignment: 1)
        let written = WebSocketFrame.writeHeader(
            opcode: .text, payloadCount: body.count, mask: nil,
            into: UnsafeMutableRawBufferPointer(start: storage, count: headerCount))
        precondition(written == headerCount, "WebSocket header of \(written) bytes, expected \(headerCount)")
        if let base = body.baseAddress, body.count > 0 {
            (storage + headerCount).copyMemory(from: base, byteCount: body.count)
        }
    }

    deinit {
        storage.deallocate()
    }

    /// The whole message, header then body. Valid only while a reference to
    /// this message is held (the output queue holds one until the write completes).
    public var bytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: storage, count: count)
    }
}

extension Frame {
    /// This frame's body as a WebSocket text message (``WebSocketMessage``),
    /// built the first time a WebSocket connection needs it and kept with
    /// the frame: a broadcast to many WebSocket subscribers encodes the
    /// message once and queues the same object to each (issue 28, "encode
    /// once"), and a broadcast with none never builds it. The server's loop
    /// thread alone calls this: the cache is not locked.
    public var webSocketMessage: WebSocketMessage {
        if let cached = webSocketCache { return cached }
        let message = WebSocketMessage(body: body)
        webSocketCache = message
        return message
    }

    /// Whether ``webSocketMessage`` has been built (tests of encode-once).
    public var hasWebSocketMessage: Bool { webSocketCache != nil }
}
