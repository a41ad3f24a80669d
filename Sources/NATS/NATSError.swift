import CNats

/// A failed NATS operation. Every case names the operation (and the subject,
/// stream or key) it came from, so a log line says what failed.
public enum NATSError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No answer within the operation's timeout.
    case timeout(operation: String)
    /// A request went to a subject nobody listens on.
    case noResponders(subject: String)
    /// The stream, message, bucket or key does not exist (JetStream 10037,
    /// 10059, or libnats `NATS_NOT_FOUND`).
    case notFound(operation: String)
    /// A publish's expected last (subject) sequence or a KV update's expected
    /// revision is stale: another writer got there first (JetStream 10071).
    case wrongLastSequence(operation: String, description: String)
    /// A KV `create` found the key already present.
    case keyExists(bucket: String, key: String)
    /// The connection is closed (by ``NATSConnection/close()`` or for good).
    case connectionClosed(operation: String)
    /// JetStream refused: libnats status `code`, JetStream `errorCode`
    /// (0 when none was given) and the server's text.
    case jetStream(operation: String, code: Int32, errorCode: Int, description: String)
    /// Any other libnats failure: its status code and text.
    case status(operation: String, code: Int32, text: String)
    /// An argument was refused before anything was sent.
    case invalidArgument(String)
    /// The server is older than a feature needs (see ``NATSServerVersion``).
    case serverTooOld(found: NATSServerVersion, minimum: NATSServerVersion, url: String)

    /// One line naming what failed and why.
    public var description: String {
        switch self {
        case .timeout(let operation): "\(operation): timed out"
        case .noResponders(let subject): "request to '\(subject)': no responders"
        case .notFound(let operation): "\(operation): not found"
        case .wrongLastSequence(let operation, let description):
            "\(operation): wrong last sequence (JetStream 10071, another writer won): \(description)"
        case .keyExists(let bucket, let key): "KV create '\(key)' in bucket '\(bucket)': the key exists"
        case .connectionClosed(let operation): "\(operation): the NATS connection is closed"
        case .jetStream(let operation, let code, let errorCode, let description):
            "\(operation): JetStream error \(errorCode) (status \(code)): \(description)"
        case .status(let operation, let code, let text): "\(operation): \(text) (libnats status \(code))"
        case .invalidArgument(let text): "invalid argument: \(text)"
        case .serverTooOld(let found, let minimum, let url):
            "nats-server \(found) at \(url) is too old: cluster mode needs \(minimum) or later (nats-server#4320: concurrent CAS publishes are both accepted before 2.9.21)"
        }
    }
}

/// JetStream API error codes this layer gives a case of its own.
enum JetStreamCode {
    static let noMessageFound = 10037
    static let streamNotFound = 10059
    static let wrongLastSequence = 10071
}

extension NATSError {
    /// Classifies a failed libnats call. Reads libnats' thread-local last
    /// error text, so call it on the thread that made the call, right after it.
    static func from(_ status: natsStatus, errorCode: jsErrCode = jsErrCode(0), operation: String) -> NATSError {
        let code = Int(errorCode.rawValue)
        let text = lastErrorText(status)
        switch status {
        case NATS_TIMEOUT: return .timeout(operation: operation)
        case NATS_NO_RESPONDERS: return .noResponders(subject: operation)
        case NATS_CONNECTION_CLOSED: return .connectionClosed(operation: operation)
        case NATS_NOT_FOUND: return .notFound(operation: operation)
        default: break
        }
        if code == JetStreamCode.wrongLastSequence || text.contains("wrong last sequence") {
            return .wrongLastSequence(operation: operation, description: text)
        }
        if code == JetStreamCode.noMessageFound || code == JetStreamCode.streamNotFound {
            return .notFound(operation: operation)
        }
        if code != 0 {
            return .jetStream(operation: operation, code: Int32(status.rawValue), errorCode: code, description: text)
        }
        return .status(operation: operation, code: Int32(status.rawValue), text: text)
    }

    /// libnats' last error text on this thread, or the status text.
    private static func lastErrorText(_ status: natsStatus) -> String {
        var last = NATS_OK
        if let text = nats_GetLastError(&last), text.pointee != 0 {
            return String(cString: text)
        }
        return String(cString: natsStatus_GetText(status))
    }
}

/// Throws ``NATSError`` for a status other than `NATS_OK`.
@inline(__always)
func check(_ status: natsStatus, errorCode: jsErrCode = jsErrCode(0), _ operation: @autoclosure () -> String) throws(NATSError) {
    if status != NATS_OK {
        throw NATSError.from(status, errorCode: errorCode, operation: operation())
    }
}
