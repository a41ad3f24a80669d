import OutaTimeProtocol

/// An `error` object from the server, in a failed reply or an `error`
/// push: a stable code for programs and a message for people (PROTOCOL.md
/// §2). The protocol's ``ProtocolError`` has the same shape, but its code is
/// one of ``ErrorCode``'s; here the code is kept as text so that a code
/// added by a later server version still reaches the caller.
public struct ServerError: Error, Sendable, Equatable, Codable, CustomStringConvertible {
    /// The snake_case code, e.g. `invalid_channel`.
    public let code: String
    /// The human explanation; its wording may change between versions.
    public let message: String

    /// Creates an error from its parts.
    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    /// The error as the protocol types carry it (an ``ErrorPush``'s).
    public init(_ error: ProtocolError) {
        self.init(code: error.code.rawValue, message: error.message)
    }

    /// The code as a known ``ErrorCode``, or nil for a code this client
    /// does not know.
    public var errorCode: ErrorCode? { ErrorCode(rawValue: code) }

    /// `code: message`.
    public var description: String { "\(code): \(message)" }
}

/// Why a request, or the connection, failed on the client's side.
public enum ClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The server answered with an error reply.
    case server(ServerError)
    /// The connection dropped after the request was sent and before its
    /// reply: the server may or may not have carried it out.
    case disconnected
    /// The connection was closed (by ``OutaTimeConnection/close()`` or for
    /// good after a refusal) before the request could be answered.
    case closed(DisconnectReason?)
    /// No reply within the request's timeout.
    case timedOut
    /// Withdrawn by the caller before it completed (an ``OutaTimeConnection/unsubscribe(_:completion:)``
    /// while the subscription was still being made).
    case cancelled
    /// The request cannot be sent: it does not encode as JSON or is longer
    /// than the server's `max_frame`.
    case invalidRequest(String)
    /// The reply's `result` does not have the shape the request expects.
    case unexpectedReply(String)

    /// A sentence for people.
    public var description: String {
        switch self {
        case .server(let error): "server error \(error)"
        case .disconnected: "the connection dropped before the reply arrived"
        case .closed(let reason?): "the connection is closed: \(reason)"
        case .closed(nil): "the connection is closed"
        case .timedOut: "no reply in time"
        case .cancelled: "cancelled"
        case .invalidRequest(let why): "cannot send the request: \(why)"
        case .unexpectedReply(let why): "unexpected reply: \(why)"
        }
    }
}
