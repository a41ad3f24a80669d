/// Why the decoder stopped: the close code to send back and a message that
/// names the bad value and what is allowed (for the Close reason and logs).
public struct WebSocketFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// The code the Close frame answering this failure carries.
    public let code: WebSocketCloseCode
    /// One line naming what was wrong, at most 123 bytes of it fit a Close frame.
    public let message: String

    /// A failure with `code` and `message`.
    public init(_ code: WebSocketCloseCode, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `<code>: <message>`.
    public var description: String { "\(code.rawValue): \(message)" }
}

/// What the decoder made of the bytes so far, one event at a time.
public enum WebSocketEvent: Equatable, Sendable {
    /// One whole text message (its fragments joined), valid UTF-8.
    case text([UInt8])
    /// A Ping with its payload (0–125 bytes): answer with a Pong carrying it.
    case ping([UInt8])
    /// A Pong with its payload.
    case pong([UInt8])
    /// The peer's Close frame: its code (nil when the frame had no payload)
    /// and its reason (valid UTF-8, possibly empty). The decoder yields
    /// nothing after it: nothing may follow a Close frame (RFC 6455 §5.5.1).
    case close(code: UInt16?, reason: String)
    /// The stream broke a rule; the decoder yields nothing more.
    case failure(WebSocketFailure)
}
