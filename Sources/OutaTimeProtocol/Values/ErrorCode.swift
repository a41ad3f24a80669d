/// The stable error codes of the wire contract (§6). Programs match on these;
/// the accompanying message is for people.
public enum ErrorCode: String, Sendable, Codable, CaseIterable {
    // Envelope and session
    /// A frame length of 0 or 1: no JSON object fits.
    case badFrame = "bad_frame"
    /// A frame length above the server's `max_frame`.
    case frameTooLarge = "frame_too_large"
    /// The body is not UTF-8 JSON, or is JSON but not an object.
    case badJSON = "bad_json"
    /// A request other than `hello` arrived before `hello`.
    case helloRequired = "hello_required"
    /// `hello` asked for a protocol version other than 1.
    case unsupportedProtocol = "unsupported_protocol"
    /// Tokens are configured and `hello` carried no valid token.
    case unauthorized
    /// The request needs a higher role than the connection has.
    case forbidden
    /// The request's `type` names no operation.
    case unknownType = "unknown_type"
    /// A field is missing or has the wrong type or range.
    case invalidRequest = "invalid_request"
    /// The connection already holds the maximum number of subscriptions.
    case tooManySubscriptions = "too_many_subscriptions"
    /// The server cannot take the request now (e.g. storage backlog); retry later.
    case serverBusy = "server_busy"
    /// A server-side failure; the message says what failed.
    case `internal`
    /// Cluster mode: the channel's owner node cannot be reached now (no
    /// owner during a takeover, this node cut off from NATS, or no answer in
    /// time); the message says whether the request was sent.
    case unavailable

    // Channels
    /// A channel name that is not `<kind>/<name>` with a valid name.
    case invalidChannel = "invalid_channel"
    /// A channel kind the server does not know.
    case unknownKind = "unknown_kind"
    /// `unsubscribe` (or a viewer action) on a channel the connection is not subscribed to.
    case notSubscribed = "not_subscribed"
    /// A `command` action the channel's kind does not have.
    case unknownAction = "unknown_action"
    /// A command's `args` are missing, ill-typed or out of range.
    case invalidArgs = "invalid_args"
    /// The thing an action names (dispatch, timer) does not exist.
    case notFound = "not_found"
    /// The action is not allowed in the current state.
    case conflict
    /// The action would add an item (a timer, a dispatch, a lap) to a
    /// channel that holds the most the server allows (`--max-channel-items`).
    case channelFull = "channel_full"
    /// Creating the channel would exceed what one token (one connection
    /// without tokens) may create (`--max-channels-per-token`).
    case quotaExceeded = "quota_exceeded"

    // Domain
    /// A starport ship model that is not in the catalog.
    case unknownModel = "unknown_model"
    /// A starport path that breaks the path rules.
    case invalidPath = "invalid_path"
    /// `travel` without a destination time.
    case noDestination = "no_destination"
    /// A time that is not ISO 8601.
    case invalidTime = "invalid_time"
}

/// A failure reported on the wire: a stable ``ErrorCode`` and a human message
/// that names the offending value and what is allowed.
public struct ProtocolError: Error, Sendable, Equatable, Codable, CustomStringConvertible {
    /// The stable, machine-readable code.
    public var code: ErrorCode
    /// The human-readable explanation.
    public var message: String

    /// Creates an error with its code and message.
    public init(_ code: ErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `code: message`, for logs.
    public var description: String { "\(code.rawValue): \(message)" }
}
