import CNats

/// A JetStream context on a connection: stream management, publish with
/// acknowledgement, and message reads.
///
/// Every call blocks until the server answers or the timeout passes: call
/// them from your own threads, never from an event loop.
public final class JetStream: @unchecked Sendable {
    // @unchecked: a libnats jsCtx is safe to use from any thread.
    let pointer: OpaquePointer
    /// The connection this context sends on (kept alive by it).
    public let connection: NATSConnection
    /// The default wait for API calls and publish acks.
    public let timeout: Duration

    /// A context on `connection` whose calls wait up to `timeout` by default.
    public init(_ connection: NATSConnection, timeout: Duration = .seconds(5)) throws(NATSError) {
        var options = jsOptions()
        try check(jsOptions_Init(&options), "init JetStream options")
        options.Wait = timeout.milliseconds
        var context: OpaquePointer?
        try check(natsConnection_JetStream(&context, connection.pointer, &options), "create a JetStream context")
        pointer = context!
        self.connection = connection
        self.timeout = timeout
    }

    deinit { jsCtx_Destroy(pointer) }

    /// Creates the stream, or updates it to `config` when it exists (only
    /// settings the server allows to change; others throw ``NATSError/jetStream(operation:code:errorCode:description:)``).
    public func ensureStream(_ config: StreamConfig) throws(NATSError) {
        try config.validate()
        try config.withC { (cfg: UnsafeMutablePointer<jsStreamConfig>) throws(NATSError) in
            var info: UnsafeMutablePointer<jsStreamInfo>?
            var code = jsErrCode(0)
            let existing = js_GetStreamInfo(&info, pointer, config.name, nil, &code)
            if existing == NATS_OK {
                jsStreamInfo_Destroy(info)
                info = nil
                let status = js_UpdateStream(&info, pointer, cfg, nil, &code)
                try check(status, errorCode: code, "update stream '\(config.name)'")
            } else if existing == NATS_NOT_FOUND || Int(code.rawValue) == JetStreamCode.streamNotFound {
                code = jsErrCode(0)
                let status = js_AddStream(&info, pointer, cfg, nil, &code)
                try check(status, errorCode: code, "create stream '\(config.name)'")
            } else {
                try check(existing, errorCode: code, "look up stream '\(config.name)'")
            }
            jsStreamInfo_Destroy(info)
        }
    }

    /// Deletes a stream (tests and tools); ``NATSError/notFound(operation:)`` when absent.
    public func deleteStream(_ name: String) throws(NATSError) {
        var code = jsErrCode(0)
        try check(js_DeleteStream(pointer, name, nil, &code), errorCode: code, "delete stream '\(name)'")
    }
}

/// What a stored message's publisher is told.
public struct PublishAck: Sendable, Equatable {
    /// The stream that stored it.
    public var stream: String
    /// Its stream sequence.
    public var sequence: UInt64
    /// True when the stream had already stored a message with this Msg-Id
    /// within its duplicate window: nothing new was stored.
    public var duplicate: Bool

    /// An ack from its fields.
    public init(stream: String, sequence: UInt64, duplicate: Bool) {
        self.stream = stream
        self.sequence = sequence
        self.duplicate = duplicate
    }
}

/// The stream sequence a publish expects as the subject's last (a CAS).
public enum ExpectedSequence: Sendable, Equatable {
    /// No expectation.
    case none
    /// The subject must have no message yet.
    case empty
    /// The subject's last message must have this stream sequence (0 means `.empty`).
    case sequence(UInt64)
}

/// Options of one JetStream publish.
public struct PublishOptions: Sendable, Equatable {
    /// `Nats-Msg-Id`: a retry with the same id inside the stream's
    /// duplicate window is acknowledged as a duplicate, not stored twice.
    public var msgID: String?
    /// The CAS on the subject's last stream sequence (JetStream 10071 when stale).
    public var expectedLastSubjectSequence: ExpectedSequence
    /// The wait for the ack; nil for the context's timeout.
    public var timeout: Duration?

    /// Options from their fields.
    public init(msgID: String? = nil, expectedLastSubjectSequence: ExpectedSequence = .none, timeout: Duration? = nil) {
        self.msgID = msgID
        self.expectedLastSubjectSequence = expectedLastSubjectSequence
        self.timeout = timeout
    }
}
