import OutaTimeProtocol

/// The WebSocket side of a connection that came through `GET /ws` on the HTTP
/// listener (protocol "WebSocket transport"): RFC 6455 messages in place of
/// length-prefixed frames. A connection holds one (``Connection/webSocket``) or
/// none (TCP, TLS); it is the one place that knows which — input goes to
/// ``Connection/receivedWebSocket(_:)`` instead of the ``FrameDecoder``,
/// output queues each frame's ``Frame/webSocketMessage`` instead of the
/// frame itself — and everything above (requests, replies, broadcasts,
/// limits, closing) is shared.
///
/// The framing itself (`WebSocketDecoder`, `WebSocketFrame`) is our own
/// code in OutaTimeProtocol: the WebSocket libraries among the available
/// packages all run on SwiftNIO, not on our libuv loop.
final class WebSocketLink {
    /// Client frames in, whole text messages out (masked frames required,
    /// fragments joined up to `max_frame`).
    var decoder: WebSocketDecoder
    /// Our Close frame is queued: no frame may follow it (RFC 6455 §5.5.1).
    private(set) var closeSent = false
    /// The peer's Close arrived: it sends nothing more; ours answers it.
    var peerClosed = false
    /// The close code the peer's Close carried (echoed in ours).
    var peerCloseCode: UInt16?
    /// The close code of the framing failure that ends the conversation
    /// (1002, 1003, 1007, 1009), for the Close after its `bye`.
    var failureCode: WebSocketCloseCode?

    init(maxMessageBytes: Int) {
        decoder = WebSocketDecoder(maxMessageBytes: maxMessageBytes, requireMasked: true)
    }

    /// The Close frame that ends the conversation: the framing failure's
    /// code, else the one for the `bye` reason, else (no `bye`: the peer
    /// closed) the peer's code echoed, or 1000.
    func closeFrame(bye: ByeReason?) -> [UInt8] {
        closeSent = true
        if let bye {
            return WebSocketFrame.close(code: failureCode ?? Self.closeCode(for: bye), reason: bye.rawValue)
        }
        let echoed = peerCloseCode.map { WebSocketCloseCode(rawValue: $0) } ?? .normal
        return WebSocketFrame.close(code: Self.answerable(echoed) ? echoed : .normal, reason: "")
    }

    /// The close code each `bye` reason goes with (protocol "WebSocket
    /// transport", close codes); framing failures carry their own.
    static func closeCode(for reason: ByeReason) -> WebSocketCloseCode {
        switch reason {
        case .serverShutdown: .goingAway
        case .protocolError: .protocolError
        case .unauthorized, .unsupportedProtocol, .slowConsumer: .policyViolation
        case .serverBusy: tryAgainLater
        case .idleTimeout, .helloTimeout, .replaced: .normal
        }
    }

    /// 1013 Try Again Later (IANA WebSocket close code registry): `server_busy`.
    static let tryAgainLater = WebSocketCloseCode(rawValue: 1013)

    /// A peer's code we may send back: 1000–1003, 1007–1011 and the
    /// application range 3000–4999 (1005/1006/1015 never go on the wire).
    private static func answerable(_ code: WebSocketCloseCode) -> Bool {
        switch code.rawValue {
        case 1000...1003, 1007...1011, 3000...4999: true
        default: false
        }
    }
}
