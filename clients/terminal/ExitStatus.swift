import OutaTimeClient
import OutaTimeProtocol

/// The exit statuses of every `outatime` command (besides 0, and 64 for a
/// bad flag, which the argument parser gives).
enum ExitStatus {
    /// The server refused the request, or refused the connection itself
    /// (a token it does not accept, a protocol version it does not speak);
    /// its code and message are printed.
    static let refused: Int32 = 1
    /// The server could not be reached: no connection, a TLS certificate
    /// refused, no answer in time. A state-changing command exits so only
    /// when nothing was sent.
    static let unreachable: Int32 = 3
    /// A state-changing command (``RetriedCommand``) was sent, and no
    /// answer came before `--timeout`, on that connection or on the new
    /// ones it was sent again on: it may or may not have been applied.
    /// Its idempotency key is printed; run the command again with
    /// `--idempotency-key KEY` to apply it at most once.
    static let outcomeUnknown: Int32 = 4

    /// The status for a connection that ended for good with `reason`.
    static func after(_ reason: DisconnectReason?) -> Int32 {
        switch reason {
        case .helloRefused?, .bye(.unauthorized)?, .bye(.unsupportedProtocol)?: refused
        default: unreachable
        }
    }

    /// What to print when a live view's connection (`watch`, `top`) is
    /// closed for good with `reason`: a refusal or failure to connect as
    /// ``message(_:host:port:)`` says, or the server's close once connected.
    static func closed(_ reason: DisconnectReason?, everConnected: Bool, host: String, port: Int) -> String {
        guard everConnected else { return message(reason, host: host, port: port) }
        return "the server closed the connection" + (reason.map { ": \($0)" } ?? "")
    }

    /// What to print for a connection that could not be made, or ended
    /// for good: a refusal in the server's words, anything else as "cannot
    /// reach".
    static func message(_ reason: DisconnectReason?, host: String, port: Int) -> String {
        switch reason {
        case .helloRefused(let error)?: "the server at \(host):\(port) refused the connection: \(error.code): \(error.message)"
        case .bye(let bye)? where after(reason) == refused:
            "the server at \(host):\(port) closed the connection: \(bye.rawValue)"
        case let reason?: "cannot reach the OutaTime server at \(host):\(port): \(reason)"
        case nil: "cannot reach the OutaTime server at \(host):\(port)"
        }
    }
}
