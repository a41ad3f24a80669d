import Foundation
import OutaTimeProtocol
import UV

/// A client connection to `outatime-server` on a libuv ``Loop``: `hello`,
/// request/reply correlation, subscriptions kept as ``ChannelMirror``s,
/// heartbeats, and reconnection with backoff that restores every
/// subscription with `since`, so a reconnect costs only the missed events.
///
/// Owned by the loop's thread and not `Sendable`: create it, call its
/// methods and read its properties only there; every callback runs there.
/// It keeps itself alive while it has work on the loop (like a NIO
/// channel), until ``close()`` or a failure that cannot be retried; after
/// that it holds no libuv handle, so the loop can exit and close.
///
/// ```swift
/// let loop = try Loop()
/// let connection = OutaTimeConnection(loop: loop, options: ClientOptions(port: 1985, name: "Marty"))
/// connection.onEvent = { event in print(event.channel, event.seq, event.event) }
/// connection.connect()
/// connection.subscribe("delorean/main")
/// loop.run()
/// ```
public final class OutaTimeConnection {
    /// The loop everything runs on.
    public let loop: Loop
    /// The options; changes apply from the next connection attempt on.
    public var options: ClientOptions
    /// Where the connection stands.
    public internal(set) var state: ConnectionState = .idle
    /// The current session's `hello` result; nil while not ready.
    public internal(set) var hello: HelloResult?
    /// Why the last connection or attempt ended.
    public internal(set) var lastDisconnect: DisconnectReason?
    /// Counters since creation.
    public internal(set) var stats = ClientStats()
    /// Loop time (``Loop/now``, ms) of the last complete frame received on
    /// any link; nil before the first. Views use it to tell how old what
    /// they show is (issue 27).
    public internal(set) var lastFrameAtMs: UInt64?
    /// How long the last frame dispatched took to arrive, first byte to
    /// last (ms): views count it in the age of the state a `subscribe`
    /// result brings (issue 27: a snapshot 12 s late on a slow link).
    public internal(set) var lastFrameTransferMs: UInt64 = 0
    /// Loop time (ms) of the liveness ping out after a silence, until
    /// anything arrives; nil while no probe is out (or not ready). Views
    /// treat the link as silent while it waits (issue 27).
    public var probeSentAtMs: UInt64? { link?.probeSentAt }

    /// The state changed (``ConnectionState``).
    public var onStateChange: ((ConnectionState) -> Void)?
    /// A durable event was applied to a mirror, in seq order, live or from
    /// a recovery (``ChannelEvent/replayed``); also events of a channel
    /// without a mirror (subscribed through ``request(_:fields:timeoutMs:completion:)``).
    public var onEvent: ((ChannelEvent) -> Void)?
    /// A mirror was brought up to date by a `subscribe` result.
    public var onSync: ((ChannelSync) -> Void)?
    /// A tick arrived (the mirror's ``ChannelMirror/lastTick`` is updated
    /// first), its data as JSON.
    public var onTick: ((TickPush<JSONValue>) -> Void)?
    /// A `publish`ed message arrived.
    public var onMessage: ((MessagePush) -> Void)?
    /// The server dropped `message` pushes of a channel while this
    /// connection's output was backed up, and says how many (protocol §12).
    public var onDropped: ((DroppedPush) -> Void)?
    /// Watchers came or went (the mirror's ``ChannelMirror/watchers`` is updated first).
    public var onPresence: ((PresencePush) -> Void)?
    /// The server sent an `error` push (a failure not tied to a request
    /// id), its code as text (see ``ServerError``).
    public var onServerError: ((ServerError) -> Void)?
    /// The server refused a subscription (also when restoring it after a
    /// reconnect); its mirror is gone.
    public var onSubscriptionFailed: ((String, ClientError) -> Void)?

    /// The random number in 0..<1 that spreads each backoff delay.
    public var randomUnit: () -> Double = { Double.random(in: 0..<1) }

    /// The largest frame accepted from the server (§1: clients accept 16 MiB).
    public static let maxIncomingFrame = 16 << 20

    /// Bytes of a frame still arriving that count as a sign of life (as a
    /// complete frame does) for the unresponsive limit: a link slower than
    /// that per limit is as good as dead; a trickle of a few bytes is not life.
    static let progressBytes = 1024

    /// How long a connection must stay ready for its drop to start the
    /// backoff again at attempt 1.
    static let stableAfterMs: UInt64 = 1_000

    // Connection state, shared with the extensions in this folder.
    var link: Link?
    var handles: Handles?
    /// Bumped whenever an attempt is abandoned, so late callbacks of it
    /// (a resolve, a connect) are recognised and ignored.
    var attemptID = 0
    /// Consecutive failed attempts since the last successful `hello`.
    var attempt = 0
    var nextRequestID: Int64 = 1
    /// Requests written on the current link, by id.
    var inFlight: [Int64: PendingRequest] = [:]
    /// Requests waiting for the connection to become ready.
    var backlog: [QueuedRequest] = []
    /// The earliest deadline the deadline timer is armed for.
    var armedDeadline: UInt64?
    var mirrors: [String: ChannelMirror] = [:]
    var subscribeWaiters: [String: [(Result<ChannelMirror, ClientError>) -> Void]] = [:]
    /// The latest `subscribe` sent per channel (a serial number): only its
    /// reply may sync the mirror (an older one may be for a mirror since
    /// unsubscribed and made anew).
    var latestSubscribe: [String: Int] = [:]
    var subscribeSerial = 0
    /// Mirrors whose `subscribe` met a transient refusal (`server_busy`),
    /// sent again at the next heartbeat.
    var retrySubscriptions: Set<String> = []
    /// Mirrored channels subscribed with `messages: false` (kept across reconnects).
    var channelsWithoutMessages: Set<String> = []
    var flushScheduled = false
    /// The `resume_key` of the last `hello` result: the next connection
    /// sends it, so that the server drops the old session at once (§6.1).
    var resumeKey: String?
    /// The round-trip estimate from `hello` and `ping` replies.
    var rtt = RTTEstimate()
    let encoder = MessageEncoder()
    let decoder = JSONDecoder()

    /// Creates a connection on `loop`; nothing happens until ``connect()``.
    public init(loop: Loop, options: ClientOptions) {
        self.loop = loop
        self.options = options
    }

    /// Starts connecting: resolve, TCP connect, `hello`. Requests and
    /// subscriptions made before the connection is ready wait for it.
    /// Does nothing unless the connection is ``ConnectionState/idle``.
    public func connect() {
        guard case .idle = state else { return }
        handles = Handles(loop: loop)
        // Requests made before connect() had no timer to expire them.
        if let first = backlog.compactMap(\.pending.deadline).min() { armDeadline(first) }
        startAttempt()
    }

    /// Skips the remaining backoff delay and attempts to connect now
    /// (a "retry now" key); does nothing unless reconnecting.
    public func reconnectNow() {
        guard case .reconnecting = state else { return }
        handles?.phase.stop()
        startAttempt()
    }

    /// Closes for good: pending requests fail with ``ClientError/closed(_:)``,
    /// the socket and timers are closed, no reconnect follows. Mirrors stay
    /// readable. Idempotent.
    public func close() {
        if case .closed = state { return }
        finish(nil)
    }

    /// The mirror of `channel`, if subscribed through ``subscribe(_:completion:)``.
    public func mirror(_ channel: String) -> ChannelMirror? { mirrors[channel] }

    /// Every mirror, by channel.
    public var allMirrors: [String: ChannelMirror] { mirrors }

    /// True once `hello` succeeded on the current connection.
    public var isReady: Bool { link?.isReady ?? false }

    func setState(_ new: ConnectionState) {
        guard new != state else { return }
        state = new
        onStateChange?(new)
    }

    /// Closes for good with `reason` (nil: by the caller).
    func finish(_ reason: DisconnectReason?) {
        attemptID += 1
        if let link {
            self.link = nil
            link.stream.close()
        }
        hello = nil
        resumeKey = nil
        setState(.closed(reason))
        let error = ClientError.closed(reason)
        let requests = inFlight.sorted { $0.key < $1.key }.map(\.value.completion) + backlog.map(\.pending.completion)
        inFlight = [:]
        backlog = []
        for completion in requests { completion(.failure(error)) }
        let waiters = subscribeWaiters
        subscribeWaiters = [:]
        for completion in waiters.values.joined() { completion(.failure(error)) }
        for channel in mirrors.keys { _ = mirrors[channel]?.endSync() }
        handles?.close()
        handles = nil
    }
}

/// The libuv handles of a connection besides its socket, created by
/// ``OutaTimeConnection/connect()`` and closed when it closes.
final class Handles {
    /// Connect timeout while connecting; backoff delay while reconnecting.
    let phase: UV.Timer
    /// Heartbeat pings, liveness probes and the unresponsiveness checks
    /// while ready (one-shot, armed for the next of them).
    let heartbeat: UV.Timer
    /// Fires at the earliest request deadline.
    let deadlines: UV.Timer
    /// Flushes the socket once per loop iteration after requests were queued.
    let flush: Prepare

    init(loop: Loop) {
        phase = UV.Timer(loop: loop)
        heartbeat = UV.Timer(loop: loop)
        deadlines = UV.Timer(loop: loop)
        flush = Prepare(loop: loop)
    }

    func close() {
        phase.close()
        heartbeat.close()
        deadlines.close()
        flush.close()
    }
}

/// One TCP connection of an ``OutaTimeConnection``: its socket, its frame
/// decoder and what its `hello` said. A reconnect makes a new one, so a
/// callback of a dropped link is told apart by identity (`link === self.link`).
final class Link {
    /// Plain TCP, or TLS once connected with ``ClientOptions/tls``.
    var stream: SocketStream
    /// A class field, not a connection field: frames are dispatched from
    /// inside `feed`, and a dispatch that drops the link must not touch the
    /// decoder being fed.
    var decoder = FrameDecoder(maxFrame: OutaTimeConnection.maxIncomingFrame)
    var isReady = false
    /// The server's `max_frame`; requests longer than this are refused locally.
    var maxFrame = 65_536
    /// The server's `heartbeat_ms`.
    var heartbeatMs: UInt64 = 15_000
    /// Loop time of the last sign of life: a complete frame, or
    /// ``OutaTimeConnection/progressBytes`` more of one still arriving (a
    /// large frame on a slow link is progress; a server that trickles a
    /// few bytes is not alive).
    var lastInboundAt: UInt64
    /// Bytes received since ``lastInboundAt`` moved.
    var bytesSinceInbound = 0
    /// Loop time `hello` succeeded on this link; nil before.
    var readyAt: UInt64?
    var pingInFlight: Bool { pingsOut > 0 }
    /// Pings sent and not answered: one, or two when a probe followed a
    /// ping older than the last bytes received.
    var pingsOut = 0
    /// Loop time of the last bytes received, of a whole frame or not: any
    /// sign of life answers a liveness probe (a long frame on a slow link
    /// is still arriving).
    var lastBytesAt: UInt64
    /// Loop time the first bytes of the frame now arriving came in; nil
    /// between frames. How long a frame took to arrive is a lower bound of
    /// the age of what it carries (a 300 KB snapshot on a 1 Mbit link: 2.4 s).
    var frameBytesSince: UInt64?
    /// Loop time `hello` was sent (its reply is the first RTT sample).
    var helloSentAt: UInt64
    /// Loop time the ping in flight was sent.
    var pingSentAt: UInt64 = 0
    /// Loop time of the last heartbeat ping (or of the heartbeat's start).
    var lastPingAt: UInt64 = 0
    /// Loop time of the ping that probes the link after a silence, until
    /// anything arrives; nil while no probe is out.
    var probeSentAt: UInt64?

    init(stream: SocketStream, now: UInt64) {
        self.stream = stream
        lastInboundAt = now
        lastBytesAt = now
        helloSentAt = now
    }
}
