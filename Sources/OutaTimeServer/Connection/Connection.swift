import OutaTimeProtocol
import UV

/// One client connection and its whole pipeline: framing in (length-
/// prefixed frames over TCP or TLS, or WebSocket messages: the one seam,
/// ``webSocket``), requests in order (``requests``), replies in order,
/// output with its limits (slow consumer, tick conflation, dropped
/// messages), and its close. Lives on the loop thread.
///
/// It knows the server only through its ``ConnectionContext``: requests go
/// to the context's router, which runs them against channels and answers
/// through ``reply(_:_:)``, ``fill(_:id:_:)`` and the `queue…` methods;
/// the router hears when the connection ends (``ConnectionRouter``).
///
/// Its lifecycle is three enums, each case carrying its data:
/// - ``state``: `awaitingHello → ready → closing(reason, deadline) → closed`;
/// - ``readSide``: `reading ⇄ paused`, then `ended` (the peer closed its side);
/// - ``requests``' input: `reading ⇄ waiting(parked, backlog)`.
final class Connection {
    /// `awaitingHello → ready → closing → closed` (STYLE: lifecycles are
    /// enums, their data in the case). Output is taken while open
    /// (`awaitingHello`, `ready`); `closing` has queued its last frame.
    enum State {
        case awaitingHello
        case ready
        /// A `bye` (or the peer's EOF) ended the conversation for `reason`:
        /// input is ignored, queued output is flushed, then the socket
        /// closes once the peer has closed too, at the latest at `deadline`
        /// (loop milliseconds).
        case closing(reason: CloseReason, deadline: UInt64)
        case closed

        /// True while requests are taken and output queued (`awaitingHello`
        /// or `ready`).
        var isOpen: Bool {
            switch self {
            case .awaitingHello, .ready: true
            case .closing, .closed: false
            }
        }

        /// True after `hello`, until the conversation ends.
        var isReady: Bool {
            if case .ready = self { return true }
            return false
        }

        /// True once the socket is closed.
        var isClosed: Bool {
            if case .closed = self { return true }
            return false
        }

        /// The state's name, for traces.
        var name: String {
            switch self {
            case .awaitingHello: "awaiting_hello"
            case .ready: "ready"
            case .closing(let reason, _): "closing(\(reason.rawValue))"
            case .closed: "closed"
            }
        }
    }

    /// The peer's side of the socket.
    enum ReadSide {
        /// Reading.
        case reading
        /// Reading stopped: the request queue is full (TCP backpressure) or
        /// the connection is over its request rate.
        case paused
        /// The peer closed its side (EOF, or a WebSocket Close): what it
        /// sent is answered, then the connection closes.
        case ended
    }

    /// Why a connection ended; logged and counted (NATS `ClosedState`).
    enum CloseReason: String {
        case peerClosed = "peer_closed"
        case readError = "read_error"
        case writeError = "write_error"
        /// The kernel gave the connection up (`ETIMEDOUT`): a dead path
        /// (keepalive or `TCP_USER_TIMEOUT`, PROTOCOL §3 "Liveness").
        case timedOut = "timed_out"
        case bye
        case lingerExpired = "linger_expired"
        case serverStopped = "server_stopped"
        /// The TLS handshake failed or a TLS record was broken.
        case tlsFailed = "tls_failed"
        /// The conversation had to end before the TLS handshake completed
        /// (no `bye` can be read then): hello timeout, shutdown.
        case tlsUnfinished = "tls_handshake_unfinished"
    }

    /// Process-unique small integer, the key in every index.
    let serial: Int
    /// The wire session id (`hello` result, watchers).
    let id: String
    /// Plain TCP or TLS; one API (``UV/SocketStream``).
    let stream: SocketStream
    /// The WebSocket framing of a connection upgraded on `GET /ws`; nil for
    /// length-prefixed frames (TCP, TLS). The transport seam: ``put(_:)``
    /// and the input callback (``Server/admit(_:host:proxy:webSocket:early:acceptedAt:)``)
    /// are the only places that look at it.
    let webSocket: WebSocketLink?
    /// The server as a connection sees it (router, encoder, counters, limits).
    let context: ConnectionContext
    /// The client's IP address, its key in ``Server/addresses`` (nil if the
    /// peer's address could not be read).
    var peerHost: String?
    @exclusivity(unchecked) private(set) var state = State.awaitingHello  // see Server.subscriptions
    /// Whether the peer's bytes are read (``State`` is about our side).
    var readSide = ReadSide.reading
    var decoder: FrameDecoder
    var role = Role.operate
    /// The tokens-file entry `hello` matched (nil in anonymous mode): a
    /// reload checks the connection against the new file by it.
    var credential: AccessToken? {
        get { rarelySet?.credential }
        set { rarelySet = newValue.map(RarelySet.init) }
    }
    /// Whose quota the channels this connection creates count against:
    /// its token's entry, else the connection itself.
    var channelCreator: ChannelCreator {
        rarelySet.map { .token($0.credential.key) } ?? .connection(serial)
    }
    /// The channels this connection may name: its token's, else all.
    var scope: ChannelScope { rarelySet?.credential.scope ?? .everything }
    /// What a connection has only with tokens, behind one reference: an
    /// anonymous idle connection pays 8 bytes for it, not 56
    /// (docs/BENCHMARKS.md, idle memory).
    private final class RarelySet {
        let credential: AccessToken
        init(_ credential: AccessToken) { self.credential = credential }
    }
    private var rarelySet: RarelySet?
    /// The operator's display name from `hello` ("anonymous" before it).
    var displayName = "anonymous"
    /// The session as presence and messages show it. Built when asked, not
    /// stored: it would repeat ``id`` in every connection (16 bytes).
    var watcher: Watcher { Watcher(session: id, name: displayName) }
    let connectedAt: UInt64
    @exclusivity(unchecked) var lastActivity: UInt64
    /// The secret of this connection's `resume_key` (§6.1), chosen by
    /// `hello`; only a ready session can be resumed, so the zero it starts
    /// with never matches.
    var resumeSecret = ResumeKey.Secret(high: 0, low: 0)
    /// The connection's requests in order, and its replies not yet sent.
    @exclusivity(unchecked) var requests = RequestQueue()
    /// The channel name this connection named last, parsed: pipelined
    /// commands name the same channel again and again (``Server/scopedChannel(_:for:)``).
    var lastChannel: ChannelName? {
        get { lastChannelBox?.name }
        set { lastChannelBox = newValue.map(LastChannel.init) }
    }
    /// Boxed for the same reason as ``credential`` (8 bytes, not 40).
    private final class LastChannel {
        let name: ChannelName
        init(_ name: ChannelName) { self.name = name }
    }
    private var lastChannelBox: LastChannel?
    /// Channels this session is subscribed to (kept by ``SubscriptionIndex``).
    var subscribed: [String] = []
    /// Queued for the once-per-iteration flush (``ConnectionContext/markDirty(_:)``).
    @exclusivity(unchecked) var isDirty = false
    /// `!held.isEmpty`, kept by `held`'s observer (declared among the flags:
    /// it takes their padding, not another word of every session). A
    /// broadcast asks this of every subscriber: a Bool is a load, where the
    /// dictionary (a class's `var` also modified in place) is a run-time
    /// exclusivity check, about 90 instructions a delivery (issue 28).
    private(set) var isHolding = false
    /// Loop time (ms) the current request-rate window ends
    /// (``ServerConfig/maxRequestsPerSecond``).
    var rateWindowEnd: UInt64 = 0
    /// Requests run in the current request-rate window.
    var requestsInWindow = 0
    /// Per channel, what waits for the output to drain: the newest tick
    /// (conflation; see ``queueTick(_:channel:)``) and the count of
    /// `message` pushes dropped (``queueMessage(_:channel:backlog:)``). Empty while
    /// the connection keeps up.
    private(set) var held: [String: HeldPushes] = [:] { didSet { isHolding = !held.isEmpty } }

    /// A channel's ephemeral pushes held back while the output is backed up.
    struct HeldPushes {
        /// The newest tick, sent when the output drains.
        var tick: Frame?
        /// `message` pushes dropped; a `dropped` push says how many.
        var droppedMessages = 0
    }

    init(serial: Int, id: String, stream: SocketStream, context: ConnectionContext, now: UInt64,
         webSocket: WebSocketLink? = nil) {
        self.serial = serial
        self.id = id
        self.stream = stream
        self.webSocket = webSocket
        self.context = context
        self.decoder = FrameDecoder(maxFrame: context.limits.maxFrame)
        self.connectedAt = now
        self.lastActivity = now
    }

    /// The transport's name for logs: `tcp`, `tls` or `ws`.
    var transport: String {
        webSocket != nil ? "ws" : stream.tls != nil ? "tls" : "tcp"
    }


    /// Moves to `next`, traced (`conn.id`, `from`, `to`).
    func transition(to next: State) {
        context.logger.trace("connection state", metadata: ["conn.id": "\(id)", "from": "\(state.name)", "to": "\(next.name)"])
        state = next
    }

    /// Queues `frame` in the transport's form: the length-prefixed frame
    /// itself, or its WebSocket message (built once per frame, shared by
    /// every WebSocket connection it goes to). Returns the bytes queued.
    /// Every frame a session sends goes through here.
    @inline(__always)
    private func put(_ frame: Frame) -> Int {
        if webSocket == nil {
            stream.enqueue(frame)
            return frame.count
        }
        if !frame.hasWebSocketMessage { context.counters.webSocketEncodes += 1 }
        let message = frame.webSocketMessage
        stream.enqueue(message)
        return message.count
    }

    /// Queues one encoded frame; no copy (the same `Frame` may go to many
    /// sessions). A session over its output limit is closed as a slow consumer.
    func send(_ frame: Frame) {
        guard queue(frame, limit: context.limits.outputBytes) else { return }
        context.counters.framesOut += 1
        context.counters.bytesOut += frame.count
    }

    /// Queues `frame` without touching the server's counters (a broadcast
    /// counts once for all its subscribers). Returns false when the session
    /// takes no more output. The output already queued is what counts
    /// against `limit`, not the new frame: one snapshot larger than the
    /// limit (up to 16 MiB, protocol §11) is not a slow consumer.
    @inline(__always)
    func queue(_ frame: Frame, limit: Int) -> Bool {
        guard state.isOpen else { return false }
        let queued = put(frame)
        if !isDirty { context.markDirty(self) }
        if stream.bufferedByteCount - queued > limit {
            close(bye: .slowConsumer)
        }
        return true
    }

    /// Queues a tick: at once while the output is short, otherwise it waits
    /// until the output has drained, replacing the channel's older waiting
    /// tick (a tick only shows the time: only the newest matters). Ticks
    /// never count toward the slow-consumer limit. Returns true when the
    /// tick was queued now (a held one is counted when it goes out).
    func queueTick(_ frame: Frame, channel: String) -> Bool {
        guard state.isReady else { return false }
        if !isHolding, isShort(context.limits.tickBacklogBytes) {
            _ = put(frame)
            if !isDirty { context.markDirty(self) }
            return true
        }
        if held[channel, default: HeldPushes()].tick.replace(with: frame) {
            context.counters.ticksConflated += 1
        }
        releaseWhenDrained()
        return false
    }

    /// Queues a `message` push while the output is short (below
    /// ``ServerConfig/tickBacklogBytes``, as ticks); beyond that it is
    /// dropped and counted for its channel, so that ephemeral chatter
    /// never closes a slow link (protocol §12). The count goes out as a
    /// `dropped` push when the output drains, or before the channel's next
    /// message that is queued, whichever comes first. Returns true when
    /// the message was queued.
    /// `backlog` is ``ServerConfig/tickBacklogBytes``, read once per broadcast.
    @inline(__always)
    func queueMessage(_ frame: Frame, channel: String, backlog: Int) -> Bool {
        guard state.isReady else { return false }
        if !isHolding, stream.bufferedByteCount < backlog {
            _ = put(frame)
            if !isDirty { context.markDirty(self) }
            return true
        }
        return queueMessageBackedUp(frame, channel: channel, backlog: backlog)
    }

    /// Whether the output is below `backlog` bytes, once what was queued
    /// since the last flush has been offered to the kernel: output is
    /// *backed up* only when the peer does not take it. Bytes queued in this
    /// loop iteration are not a backlog yet: several publishers on a
    /// channel, or one whose reads go on while cheap (``ReadBudget``), queue
    /// more than 64 KiB to every subscriber between two flushes, and their
    /// messages were dropped (counted in `dropped`) for subscribers that
    /// read everything at once (issue 28). The early flush is one `write`,
    /// made only when the backlog is reached.
    private func isShort(_ backlog: Int) -> Bool {
        if stream.bufferedByteCount < backlog { return true }
        guard isDirty else { return false }
        stream.flush()
        return stream.bufferedByteCount < backlog
    }

    /// ``queueMessage(_:channel:backlog:)`` while something is held or the output is long.
    private func queueMessageBackedUp(_ frame: Frame, channel: String, backlog: Int) -> Bool {
        guard isShort(backlog) else {
            held[channel, default: HeldPushes()].droppedMessages += 1
            context.counters.messagesDropped += 1
            releaseWhenDrained()
            return false
        }
        // Short again, ticks still waiting for the drain: the count first.
        if let dropped = held[channel]?.droppedMessages, dropped > 0 {
            held[channel]?.droppedMessages = 0
            if held[channel]?.tick == nil { held[channel] = nil }
            if held.isEmpty { stream.onDrained = nil }
            sendDropped(dropped, channel: channel)
        }
        _ = put(frame)
        if !isDirty { context.markDirty(self) }
        return true
    }

    private func releaseWhenDrained() {
        if stream.onDrained == nil {
            // Strong and alone: no closure box (see `Server.accept`); cleared on release or close.
            stream.onDrained = { self.releaseHeld() }
        }
    }

    /// The output drained: each channel's count of dropped messages, then
    /// its waiting tick, go out.
    private func releaseHeld() {
        stream.onDrained = nil
        let waiting = held
        held = [:]
        guard state.isReady else { return }
        for (channel, pushes) in waiting {
            if pushes.droppedMessages > 0 { sendDropped(pushes.droppedMessages, channel: channel) }
            if let frame = pushes.tick {
                _ = put(frame)
                context.counters.deliveries += 1
                context.counters.framesOut += 1
                context.counters.bytesOut += frame.count
            }
        }
        if !isDirty { context.markDirty(self) }
    }

    /// Queues `{"type":"dropped","channel":C,"messages":N}` (per connection, rare).
    private func sendDropped(_ count: Int, channel: String) {
        guard let frame = encoded(DroppedPush(channel: channel, messages: count)) else { return }
        _ = put(frame)
        context.counters.framesOut += 1
        context.counters.bytesOut += frame.count
        if !isDirty { context.markDirty(self) }
    }

    /// Drops waiting ticks and counts (the conversation is ending).
    func dropHeld() {
        held = [:]
        stream.onDrained = nil
    }

    /// Queues the last frame of a conversation (the `bye`) as the
    /// connection starts closing: no limit check, nothing may follow — on
    /// WebSocket but the Close frame, whose reason is the `bye` reason
    /// (``beginClosing(reason:bye:)`` queues both).
    func sendFinal(_ bye: ByePush) {
        guard case .closing = state, let frame = context.encoded(bye, for: self) else { return }
        enqueue(frame)
    }

    /// On WebSocket, queues the Close frame once, as the conversation ends
    /// (after the `bye`, or on its own without one: the peer's Close or
    /// EOF); nothing on TCP and TLS.
    func sendWebSocketClose(bye: ByeReason?) {
        guard let webSocket, !webSocket.closeSent, !state.isClosed else { return }
        stream.enqueue(OwnedBytes(webSocket.closeFrame(bye: bye)))
        context.markDirty(self)
    }

    /// Queues a Pong answering a Ping (WebSocket control frames go between messages).
    func sendWebSocketPong(_ payload: [UInt8]) {
        guard let webSocket, !webSocket.closeSent, !state.isClosed else { return }
        stream.enqueue(OwnedBytes(WebSocketFrame.encode(opcode: .pong, payload: payload)))
        if !isDirty { context.markDirty(self) }
    }

    private func enqueue(_ frame: Frame) {
        _ = put(frame)
        context.counters.framesOut += 1
        context.counters.bytesOut += frame.count
        context.markDirty(self)
    }

    /// Encodes and queues one message.
    func send<Message: Encodable>(_ message: Message) {
        guard state.isOpen else { return }
        do {
            send(try context.encoder.frame(message))
        } catch {
            context.logger.error("encoding failed", metadata: ["conn.id": "\(id)", "error": "\(error)"])
        }
    }

    /// Reserves the place of a reply that comes later (a commit, a read
    /// off the loop, a forwarded request, a late `hello`): replies leave in
    /// request order, so later ones wait behind it until ``fill(_:id:_:)``.
    func reserveReply() -> ReplySlot {
        requests.reserve()
    }

    /// Writes everything queued since the last flush (the server's
    /// once-per-iteration flush of ``ConnectionContext/dirty``).
    func flush() {
        isDirty = false
        stream.flush()
    }

    /// Replies to a request: success if it had an id (silent otherwise), in
    /// request order.
    func reply<Result: Encodable>(_ id: RequestID?, _ result: Result) {
        guard let id else { return }
        answer(ReplyOK(id: id, result: result))
    }

    /// Reports a failure: a reply (in request order) when the request had an
    /// id, else an `error` push at once.
    func fail(_ id: RequestID?, _ error: ProtocolError) {
        if let id {
            answer(ReplyError(id: id, error: error))
        } else {
            send(ErrorPush(error: error))
        }
    }

    /// Sends a reply now, or keeps it until the replies before it are sent.
    private func answer<Message: Encodable>(_ message: Message) {
        guard state.isOpen, let frame = encoded(message) else { return }
        if let now = requests.answer(frame) { send(now) }
    }

    /// Answers a request whose reply was reserved (``RequestQueue/reserve()``):
    /// success if it had an id (nothing otherwise), then sends every reply
    /// now due, in order.
    func fill<Result: Encodable>(_ slot: ReplySlot, id: RequestID?, _ result: Result) {
        fill(slot, id.flatMap { encoded(ReplyOK(id: $0, result: result)) })
    }

    /// Fills a reserved reply with a `result` that writes its own fields,
    /// written into the frame directly (a command's usual result).
    func fill(_ slot: ReplySlot, id: RequestID?, writing result: any JSONWritable & Sendable) {
        fill(slot, id.flatMap { id in
            do {
                return try context.encoder.replyFrame(id: id, result: result)
            } catch {
                context.logger.error("encoding failed", metadata: ["conn.id": "\(self.id)", "error": "\(error)"])
                return nil
            }
        })
    }

    /// Fails a request whose reply was reserved: an error reply if it had
    /// an id, else an `error` push.
    func fill(_ slot: ReplySlot, id: RequestID?, failure: ProtocolError) {
        if id == nil { send(ErrorPush(error: failure)) }
        fill(slot, id.flatMap { encoded(ReplyError(id: $0, error: failure)) })
    }

    /// Answers a reserved reply with a frame already encoded (a forwarded
    /// request's answer), or with nothing (a request without `id`).
    func fill(_ slot: ReplySlot, frame: Frame?) { fill(slot, frame) }

    private func fill(_ slot: ReplySlot, _ frame: Frame?) {
        guard state.isOpen else { return }
        for ready in requests.fill(slot, with: frame) { send(ready) }
        resumeReadingIfRoom()
        closeIfPeerDone()
    }

    private func encoded<Message: Encodable>(_ message: Message) -> Frame? {
        context.encoded(message, for: self)
    }
}

extension Frame: ByteChunk {}
extension WebSocketMessage: ByteChunk {}

extension Optional {
    /// Sets the value; true if there was one (it was replaced).
    fileprivate mutating func replace(with value: Wrapped) -> Bool {
        defer { self = value }
        return self != nil
    }
}
