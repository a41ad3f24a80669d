// RFC 6455 framing is our own by necessity: no WebSocket library among the
// available packages works on our libuv loop without SwiftNIO (swift-nio's
// NIOWebSocket needs NIO channels; websocket-kit and Hummingbird's WebSocket
// sit on top of NIO), and the codec is small and pure. It knows no sockets:
// the server and the load harness feed it bytes and write what it encodes.

/// The opcode of a WebSocket frame (RFC 6455 §5.2). 3–7 and 11–15 are
/// reserved: a frame carrying one is a protocol error (1002).
public enum WebSocketOpcode: UInt8, Sendable, Equatable {
    /// A further fragment of the message in progress.
    case continuation = 0
    /// The first frame of a UTF-8 text message.
    case text = 1
    /// The first frame of a binary message (not used by OutaTime: refused with 1003).
    case binary = 2
    /// A Close frame: an optional 2-byte code, then an optional UTF-8 reason.
    case close = 8
    /// A Ping: the peer expects a Pong with the same payload.
    case ping = 9
    /// A Pong: an answer to a Ping, or an unsolicited heartbeat.
    case pong = 10

    /// Close, Ping and Pong: at most 125 bytes of payload, never fragmented.
    public var isControl: Bool { rawValue & 0x08 != 0 }
}

/// The status code of a Close frame (RFC 6455 §7.4).
public struct WebSocketCloseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The code as sent on the wire.
    public let rawValue: UInt16

    /// Wraps any code; ``isAllowedOnTheWire`` tells whether a peer may send it.
    public init(rawValue: UInt16) {
        self.rawValue = rawValue
    }

    /// 1000: the purpose of the connection is fulfilled.
    public static let normal = WebSocketCloseCode(rawValue: 1000)
    /// 1001: the endpoint is going away (server shutting down, page left).
    public static let goingAway = WebSocketCloseCode(rawValue: 1001)
    /// 1002: a malformed frame or a broken framing rule.
    public static let protocolError = WebSocketCloseCode(rawValue: 1002)
    /// 1003: a kind of data the endpoint cannot accept (OutaTime: binary messages).
    public static let unsupportedData = WebSocketCloseCode(rawValue: 1003)
    /// 1007: a text message or close reason that is not valid UTF-8.
    public static let invalidPayload = WebSocketCloseCode(rawValue: 1007)
    /// 1008: a message that violates the endpoint's policy.
    public static let policyViolation = WebSocketCloseCode(rawValue: 1008)
    /// 1009: a message too big to process (over the decoder's `maxMessageBytes`).
    public static let messageTooBig = WebSocketCloseCode(rawValue: 1009)
    /// 1011: the server met an unexpected condition.
    public static let internalError = WebSocketCloseCode(rawValue: 1011)

    /// Whether a Close frame may carry this code (RFC 6455 §7.4.1–2 and the
    /// IANA registry): 1000–1003, 1007–1011 and 3000–4999. 1004–1006 and
    /// 1015 are reserved for local use and never sent; below 1000 and
    /// 1012–2999 are unassigned or reserved for later standards (1012–1014
    /// were registered after the RFC and are accepted too).
    public var isAllowedOnTheWire: Bool {
        switch rawValue {
        case 1000...1003, 1007...1014, 3000...4999: true
        default: false
        }
    }

    /// The number, e.g. `1002`.
    public var description: String { String(rawValue) }
}
