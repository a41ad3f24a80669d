import OutaTimeProtocol
import UV

/// One client connection: its framing state, identity, role and output.
/// Lives on the loop thread; the server drives its lifecycle.
final class Session {
    /// `awaitingHello → ready → closing → closed` (STYLE: lifecycles are enums).
    enum State: Equatable {
        case awaitingHello
        case ready
        /// A `bye` (or the peer's EOF) ended the conversation: input is
        /// ignored, queued output is flushed, then the socket closes.
        case closing
        case closed
    }

    /// Why a connection ended; logged and counted (NATS `ClosedState`).
    enum CloseReason: String {
        case peerClosed = "peer_closed"
        case readError = "read_error"
        case writeError = "write_error"
        case bye
        case lingerExpired = "linger_expired"
        case serverStopped = "server_stopped"
    }

    /// Process-unique small integer, the key in every index.
    let serial: Int
    /// The wire session id (`hello` result, watchers).
    let id: String
    let stream: TCPStream
    unowned let server: Server
    var state = State.awaitingHello
    var decoder: FrameDecoder
    var role = Role.operate
    var watcher: Watcher
    let connectedAt: UInt64
    var lastActivity: UInt64
    /// Set while a request waits for storage: later frames wait in `backlog`
    /// (reading pauses once it holds `Server.backlogFrames`), so replies keep
    /// request order.
    var isBlocked = false
    var backlog: [[UInt8]] = []
    /// Channels this session is subscribed to (kept by ``SubscriptionIndex``).
    var subscribed: [String] = []
    /// Queued for the once-per-iteration flush.
    var isDirty = false
    /// Nothing more may be queued (a `bye` is in the buffer).
    var isSealed = false
    var sawEOF = false
    var closeDeadline: UInt64?
    var closeReason: CloseReason?

    init(serial: Int, id: String, stream: TCPStream, server: Server, maxFrame: Int, now: UInt64) {
        self.serial = serial
        self.id = id
        self.stream = stream
        self.server = server
        self.decoder = FrameDecoder(maxFrame: maxFrame)
        self.watcher = Watcher(session: id, name: "anonymous")
        self.connectedAt = now
        self.lastActivity = now
    }

    /// Queues one encoded frame; no copy (the same `Frame` may go to many
    /// sessions). A session over its output limit is closed as a slow consumer.
    func send(_ frame: Frame) {
        guard queue(frame, limit: server.config.outputLimitBytes) else { return }
        server.counters.framesOut += 1
        server.counters.bytesOut += frame.count
    }

    /// Queues `frame` without touching the server's counters (a broadcast
    /// counts once for all its subscribers). Returns false when the session
    /// takes no more output.
    @inline(__always)
    func queue(_ frame: Frame, limit: Int) -> Bool {
        guard !isSealed, state != .closed else { return false }
        stream.enqueue(frame)
        if !isDirty { server.markDirty(self) }
        if stream.bufferedByteCount > limit {
            server.close(self, bye: .slowConsumer)
        }
        return true
    }

    /// Queues the last frame of a conversation (the `bye`) and seals the
    /// output: no limit check, nothing may follow.
    func sendFinal<Message: Encodable>(_ message: Message) {
        guard !isSealed, state != .closed else { return }
        isSealed = true
        do {
            enqueue(try server.encoder.frame(message))
        } catch {
            server.logger.error("encoding failed", metadata: ["conn.id": "\(id)", "error": "\(error)"])
        }
    }

    private func enqueue(_ frame: Frame) {
        stream.enqueue(frame)
        server.counters.framesOut += 1
        server.counters.bytesOut += frame.count
        server.markDirty(self)
    }

    /// Encodes and queues one message.
    func send<Message: Encodable>(_ message: Message) {
        guard !isSealed, state != .closed else { return }
        do {
            send(try server.encoder.frame(message))
        } catch {
            server.logger.error("encoding failed", metadata: ["conn.id": "\(id)", "error": "\(error)"])
        }
    }

    /// Replies to a request: success if it had an id (silent otherwise).
    func reply<Result: Encodable>(_ id: RequestID?, _ result: Result) {
        guard let id else { return }
        send(ReplyOK(id: id, result: result))
    }

    /// Reports a failure: a reply when the request had an id, else an `error` push.
    func fail(_ id: RequestID?, _ error: ProtocolError) {
        if let id {
            send(ReplyError(id: id, error: error))
        } else {
            send(ErrorPush(error: error))
        }
    }
}

extension Frame: ByteChunk {}
