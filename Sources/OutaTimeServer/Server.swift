import Foundation
import DequeModule
import Logging
import OutaTimeDomain
import OutaTimeProtocol
import OutaTimeStore
import UV

/// The OutaTime server: one libuv loop thread owns every session, channel and
/// subscription, with no locks. Storage (any ``DurableStore``) commits off
/// the loop and reports back through the loop's inbox.
///
/// Use ``ServerHandle`` to run it on a thread of its own, or ``run(config:logger:onListening:)``
/// to run it on the calling thread with SIGINT/SIGTERM handling.
final class Server {
    /// `starting → running → draining → stopped`, traced.
    enum Phase {
        case starting
        case running
        /// Not accepting or reading: pending writes finish, then every
        /// connection gets `bye server_shutdown` — at the latest at
        /// `deadline` (loop milliseconds).
        case draining(deadline: UInt64)
        case stopped
    }

    /// `hello` and `stats` report it (one place: ``OutaTimeVersion``).
    static let version = OutaTimeVersion.serverName

    let config: ServerConfig
    let logger: Logger
    let loop: Loop
    /// Where channels are stored (``ServerConfig/storage``); the server
    /// uses nothing of it but the protocol.
    let store: any DurableStore
    /// The domain's time (``MonotonicClock``): what countdowns and events read.
    let clock: MonotonicClock
    /// The server's time for every deadline, and the tests' seam to move
    /// it forward (``ServerClock``); the domain clock shares its offset.
    let time: ServerClock
    var phase = Phase.starting

    /// What every connection shares of the server: the encoder, the
    /// counters, the limits, the flush list; the server is its router.
    let connectionContext: ConnectionContext
    /// Encodes every reply and push (loop thread only); the connections
    /// share it through their context. Stored here too: read through a
    /// computed property it was retained once per publish.
    let encoder: ReusableMessageEncoder
    /// Each event's `at`, formatted once a second (loop thread only).
    var eventTimes = ISOTime.SecondCache()
    /// The counters `stats` and `/metrics` report (kept in the connections' context).
    var counters: ServerCounters {
        _read { yield connectionContext.counters }
        _modify { yield &connectionContext.counters }
    }
    let startedAt = Date()
    let bootID: String

    var connections: [Int: Connection] = [:]
    /// Per client address: connections held (``ServerConfig/maxConnectionsPerAddress``).
    var addresses = AddressTable()
    /// Recent failed `hello`s per address and per token: how long each
    /// `hello` waits (``HelloThrottle``).
    var throttle: HelloThrottle
    /// Loop time before which no further refusal warning is logged.
    var nextRefusalWarning: UInt64 = 0
    /// Refused plain connections waiting for their peer's EOF after the
    /// `error` and `bye` (``Server/refuse(_:limit:host:tls:)``), with their deadlines.
    var lingeringRefusals: [ObjectIdentifier: (stream: TCPStream, deadline: UInt64)] = [:]
    /// The bytes of each refusal, encoded once (``RefusalFrames``).
    var refusalFrames = RefusalFrames()
    /// Keeps failed accepts (descriptors exhausted) from flooding the log.
    var acceptFailureLog = LogRateLimit(limit: 1, windowMs: 10_000)
    /// Connections from a trusted balancer (`--proxy-from`) whose PROXY
    /// header has not arrived yet (``awaitProxyHeader(on:tls:proxy:)``).
    var proxyHeaderWaits: [ObjectIdentifier: ProxyHeaderWait] = [:]
    var nextSerial = 0
    var channels: [String: Channel] = [:]
    /// Channels that may be idle and empty, with the loop time they were
    /// last seen so; checked by ``forgetIdleChannels(now:)``.
    var idleCandidates: [String: UInt64] = [:]
    // `@exclusivity(unchecked)` on the loop-thread state that every publish
    // touches (issue 28, session 19: eight run-time access checks a publish,
    // ~550 instructions under callgrind); it is never accessed overlapping,
    // which the checked builds of every earlier session's tests confirmed.
    @exclusivity(unchecked) var subscriptions = SubscriptionIndex()
    /// The accepted tokens; nil in anonymous mode. Replaced by ``reload()``.
    var tokens: TokenTable?

    var nextTicket: UInt64 = 0
    /// Channels with an open batch, submitted before the loop waits.
    var unsubmitted: [Channel] = []
    /// Writes handed to the writer and not yet reported, by ticket.
    var pendingWrites: [UInt64: PendingWrite] = [:]
    /// Outcomes reported by the writer and not yet acted on, oldest first
    /// (``reportCommits()``: a large group is handled over several loop
    /// iterations).
    var reportBacklog: Deque<StoreCommit> = []
    /// Work put off to the next loop iteration because its time budget was
    /// spent (``takeNextTurn()``): commit reports, HTTP heads.
    let nextTurn: NextTurn
    /// Nanoseconds ``reportCommits()`` ran in this loop iteration (the
    /// inbox may bring several reports in one).
    var reportTimeThisIteration: UInt64 = 0
    /// Loop iterations begun (counted in the flusher's prepare callback):
    /// what was computed in this one may be reused in it (``metricsText()``).
    var iteration: UInt64 = 0
    /// The last `/metrics` text and the iteration it was rendered in.
    var renderedMetrics: (iteration: UInt64, text: String)?
    var pendingReads: [UInt64: (Result<[HistoryEvent], StoreFailure>) -> Void] = [:]
    /// Cluster mode's `list` reads, by ticket (``readStoredChannels(_:)``).
    var pendingChannelReads: [UInt64: (Result<[ChannelRecord], StoreFailure>) -> Void] = [:]
    /// Cluster mode's loads of channels, by ticket (``readForLoading(_:completion:)``).
    var pendingLoads: [UInt64: (Result<LoadRead, StoreFailure>) -> Void] = [:]
    /// The thread running the loop: every entry point asserts it.
    private let loopThread = pthread_self()

    /// The plaintext listener (nil with `--no-plain`).
    private(set) var listener: TCPListener?
    /// The TLS listener (nil without `--tls-port`).
    private(set) var tlsListener: TCPListener?
    /// What new TLS connections are made from; replaced by ``reloadTLS(_:)``
    /// (established connections keep the context they were made with).
    private(set) var tlsContext: TLSContext?
    /// The files ``tlsContext`` was loaded from.
    private(set) var tlsFiles: TLSFiles?
    /// Bounds the TLS handshake steps per loop iteration.
    var handshakeGate: TLSHandshakeGate?
    /// The HTTP listener (`--http`), if any, and its open connections.
    var httpListener: TCPListener?
    var httpConnections: [Int: HTTPConnection] = [:]
    /// The HTTP listener is at ``ServerConfig/maxHTTPConnections`` with a
    /// connection waiting: libuv watches it again once that one is accepted.
    var httpAcceptPaused = false
    /// HTTP connections from a trusted balancer whose PROXY header has not
    /// come yet (in ``proxyHeaderWaits``): they count toward
    /// ``ServerConfig/maxHTTPConnections``.
    var httpProxyHeaderWaits = 0
    var nextHTTPSerial = 0
    /// Channels each token (each connection without tokens) created
    /// (``ServerConfig/maxChannelsPerToken``).
    var channelQuotas = ChannelQuotas()
    /// HTTP connections held per client IP address
    /// (``ServerConfig/maxHTTPConnectionsPerAddress``); an address goes
    /// when its last connection closes.
    var httpAddresses: [String: Int] = [:]
    /// HTTP connections whose next heads wait for the next loop iteration
    /// (``Server/answerHTTP(_:)``).
    var httpTurns: Deque<HTTPConnection> = []
    /// Why the store's last write failed, until one succeeds: `/healthz`
    /// answers 503 meanwhile, saying it (``storeTrouble``) as the failure's
    /// description.
    var storeFailure: StoreFailure?
    /// The store link's reconnect count when ``storeFailure`` was set: a
    /// failure that an outage caused is stale once the link came back.
    var storeFailureReconnects = 0
    /// `/metrics` (built on the first scrape's server, kept after).
    lazy var metrics = ServerMetrics(version: Self.version)
    /// Whether ticks feed ``metrics``' lateness histogram: with `--http`,
    /// or since the first `stats` with `format` `prometheus`.
    lazy var recordsMetrics = config.http != nil
    let inbox: AsyncInbox<ServerMessage>
    /// Submits open batches and flushes before the loop waits.
    private let flusher: Prepare
    /// Fires a deferred (coalesced) flush.
    private let flushTimer: PreciseTimer
    private var flushTimerArmed = false
    /// `Loop.hrtime` of the last flush pass.
    private var lastFlushNs: UInt64 = 0
    /// Crowded channels' presence, gathered until `presenceTimer` fires.
    var gatheredPresence: [String: PresenceSummary] = [:]
    /// Sends the gathered presence of crowded channels.
    let presenceTimer: UV.Timer
    /// Runs ``sweep()``: deadlines of connections, refusals and idle channels.
    private let sweeper: UV.Timer
    /// Records the alive-until moment each second (``recordAlive(force:)``).
    private let aliveTimer: UV.Timer
    /// Wakes channels' clocks (by channel key).
    let scheduler: Scheduler<String>
    /// Wakes rate-limited connections (by serial) when their next request-rate
    /// window begins (``overRequestRate(_:)``).
    let rateWakeups: Scheduler<Int>
    /// Wakes connections whose failed `hello` is answered late (by serial),
    /// with what to answer (``ServerConfig/failedHelloDelayMs``).
    let helloDelays: Scheduler<Int>
    /// Set by ``closeOwnHandles()``: a server dropped before then (never
    /// started, its start failed, or its init threw once it was whole)
    /// closes its handles in `deinit`.
    private var ownHandlesClosed = false
    /// Whether ``start(handleSignals:)`` started the cluster fabric (what
    /// `deinit` stops when the loop never ran).
    private var fabricStarted = false
    var slowedHellos: [Int: SlowedHello] = [:]
    /// The rate limit of the `notice` line a failed `hello` logs (``logFailedHello(on:problem:client:name:)``).
    var failedHelloLog = LogRateLimit(limit: Server.failedHelloLogLimit, windowMs: Server.failedHelloLogWindowMs)
    private var signals: [Signal] = []
    /// systemd's notification socket (`$NOTIFY_SOCKET`), when the
    /// executable runs as a `Type=notify` service (``notifyService(_:)``).
    var serviceNotifier: ServiceNotifier?
    /// Cluster mode's ownership, forwarding and relay (nil on a single server).
    let cluster: ClusterNode?

    /// Opens the store and loads every channel; does not listen yet.
    init(config: ServerConfig, logger: Logger) throws {
        try config.validate()
        self.config = config
        self.logger = logger
        self.throttle = HelloThrottle(freeFailures: config.maxFailedHellos, baseDelayMs: config.failedHelloDelayMs,
                                      maxDelayMs: config.maxFailedHelloDelayMs, windowMs: config.failedHelloWindowMs)
        let loop = try Loop()
        self.loop = loop
        let time = ServerClock(loop: loop)
        self.time = time
        self.clock = MonotonicClock(offset: time.offset)
        self.encoder = ReusableMessageEncoder()
        self.connectionContext = ConnectionContext(encoder: encoder, logger: logger, limits: ConnectionLimits(config), time: time)
        if config.readBudgetMicroseconds > 0 {
            loop.readTimePerIteration = UInt64(config.readBudgetMicroseconds) * 1_000
        }
        // The server's own handles are made with the loop, without work:
        // ``start(handleSignals:)`` gives them theirs. The one that can fail
        // (a timer fd) comes first, while nothing else is open.
        let flushTimer = try PreciseTimer(loop: loop)
        self.flushTimer = flushTimer
        let nextTurn = NextTurn(loop: loop), flusher = Prepare(loop: loop), presenceTimer = UV.Timer(loop: loop),
            sweeper = UV.Timer(loop: loop), aliveTimer = UV.Timer(loop: loop)
        let scheduler = Scheduler<String>(loop: loop, clock: time)
        let rateWakeups = Scheduler<Int>(loop: loop, clock: time), helloDelays = Scheduler<Int>(loop: loop, clock: time)
        (self.nextTurn, self.flusher, self.presenceTimer, self.sweeper, self.aliveTimer) =
            (nextTurn, flusher, presenceTimer, sweeper, aliveTimer)
        (self.scheduler, self.rateWakeups, self.helloDelays) = (scheduler, rateWakeups, helloDelays)
        // Until `self` is whole, a failure closes what was made here (no
        // `deinit` runs for a half-made object); after, `deinit` does.
        var inboxMade: AsyncInbox<ServerMessage>?
        let abandon = {
            let handles: [Handle] = [flushTimer, nextTurn, flusher, presenceTimer, sweeper, aliveTimer]
            for handle in handles { handle.close() }
            scheduler.close()
            rateWakeups.close()
            helloDelays.close()
            inboxMade?.close()
            Self.closeLoop(loop, logger: logger)
        }
        // The inbox exists before the store that reports through it; its
        // handler is attached once `self` is fully initialised.
        let relay = MessageRelay()
        do {
            let inbox = try AsyncInbox<ServerMessage>(loop: loop) { messages in
                for message in messages { relay.handler?(message) }
            }
            inboxMade = inbox
            let sender = inbox.sender
            self.inbox = inbox
            self.store = try config.storage.open(
                StoreOpening(historyLimit: config.historyLimit, logger: logger) { commits in
                    sender.post(.committed(commits))
                },
                config: config)
            if let entries = config.tokens {
                self.tokens = TokenTable(entries)
            } else if let path = config.tokensFile {
                let table = try TokenTable.load(from: path)
                try config.checkCertificateEntries(table, file: path)
                self.tokens = table
            } else {
                self.tokens = nil
            }
        } catch {
            abandon()
            throw error
        }
        self.cluster = config.fabric.map(ClusterNode.init)
        self.bootID = String((0..<6).map { _ in "0123456789abcdefghijklmnopqrstuvwxyz".randomElement()! })
        relay.handler = { [unowned self] message in self.handle(message) }
        connectionContext.attach(self)
        if let files = config.tls {
            tlsContext = try Self.makeTLSContext(files)
            tlsFiles = files
        }
        warnAboutExposedSecretFiles("start")
        // In cluster mode channels are loaded as their slots are gained.
        if cluster == nil { try loadChannels() }
    }

    /// The bound addresses of ``start(handleSignals:)``.
    struct Listening {
        /// The plaintext listener's, if there is one.
        var plain: SocketAddress?
        /// The TLS listener's, if there is one.
        var tls: SocketAddress?
        /// The HTTP listener's (`--http`), if there is one.
        var http: SocketAddress?
    }

    private static func makeTLSContext(_ files: TLSFiles) throws(TLSError) -> TLSContext {
        try TLSContext.server(certificateFile: files.certificateFile, privateKeyFile: files.privateKeyFile,
                              clientCAFile: files.clientCAFile)
    }

    /// Loads the TLS certificate, key and client CA again — from `files`, or
    /// from the same paths as before when nil — and uses them for every new
    /// TLS connection; established ones keep theirs. On failure the current
    /// context stays and the error says what is wrong. Loop thread only.
    func reloadTLS(_ files: TLSFiles? = nil) throws(TLSError) {
        assertOnLoopThread()
        guard let files = files ?? tlsFiles else { throw TLSError("the server has no TLS listener to reload") }
        let context: TLSContext
        do {
            context = try Self.makeTLSContext(files)
        } catch {
            logger.error("TLS reload failed, keeping the current certificate", metadata: ["error": "\(error)"])
            throw error
        }
        tlsContext = context
        tlsFiles = files
        logger.notice("TLS certificate reloaded", metadata: ["cert": "\(files.certificateFile)"])
    }

    /// Binds, listens and starts the per-iteration flush and the sweep timer.
    /// Returns the bound addresses.
    func start(handleSignals: Bool) throws -> Listening {
        var bound = Listening()
        if config.plainListener {
            let listener = TCPListener(loop: loop)
            self.listener = listener
            try listening(on: config.host, config.port, flag: "--port") {
                try listener.bind(SocketAddress(host: config.host, port: config.port))
                try listener.listen(acceptsPerIteration: Self.acceptsPerIteration) { [unowned self, unowned listener] error in
                    self.accept(error, from: listener, tls: false)
                }
            }
            bound.plain = listener.localAddress
        }
        if let tlsPort = config.tlsPort {
            let listener = TCPListener(loop: loop)
            tlsListener = listener
            try listening(on: config.host, tlsPort, flag: "--tls-port") {
                try listener.bind(SocketAddress(host: config.host, port: tlsPort))
                try listener.listen(acceptsPerIteration: Self.acceptsPerIteration) { [unowned self, unowned listener] error in
                    self.accept(error, from: listener, tls: true)
                }
            }
            handshakeGate = TLSHandshakeGate(loop: loop, perIteration: config.tlsHandshakesPerIteration)
            bound.tls = listener.localAddress
        }
        if let endpoint = config.http {
            if config.httpTLS, handshakeGate == nil {
                handshakeGate = TLSHandshakeGate(loop: loop, perIteration: config.tlsHandshakesPerIteration)
            }
            bound.http = try startHTTP(endpoint)
        }
        scheduler.onDue = { [unowned self] key, now in self.clockDue(key, now: now) }
        rateWakeups.onDue = { [unowned self] serial, _ in self.rateWindowBegan(serial) }
        helloDelays.onDue = { [unowned self] serial, _ in self.slowedHelloDue(serial) }
        recoverChannelsAfterRestart()
        if let fabric = cluster?.fabric {
            let sender = inbox.sender
            fabricStarted = true
            try fabric.start { event in sender.post(.cluster(event)) }
            if let table = fabric.awaitOwnership(timeoutMs: config.clusterStartWaitMs) {
                handle(.ownership(table))
            } else {
                logger.warning("listening before every slot has an owner: requests on unowned channels fail 'unavailable' until the cluster settles (/readyz says when)", metadata: ["waited_ms": "\(config.clusterStartWaitMs)"])
            }
        }
        flusher.start { [unowned self] in
            self.reportTimeThisIteration = 0
            self.iteration &+= 1
            self.submitOpenBatches()
            self.flushSoon()
        }
        nextTurn.setWork { [unowned self] in takeNextTurn() }
        let interval = UInt64(max(10, min(1000, config.heartbeatMs / 4)))
        sweeper.start(timeoutMs: interval, repeatMs: interval) { [unowned self] in self.sweep() }
        aliveTimer.start(timeoutMs: 1000, repeatMs: 1000) { [unowned self] in self.recordAlive() }
        if handleSignals {
            for signum in [SIGINT, SIGTERM] {
                let signal = Signal(loop: loop)
                try signal.start(signum) { [unowned self] number in
                    self.logger.notice("signal received, shutting down", metadata: ["signal": "\(number)"])
                    self.notifyService { try $0.stopping(status: "draining connections") }
                    self.beginShutdown()
                }
                signals.append(signal)
            }
            let hangup = Signal(loop: loop)
            try hangup.start(SIGHUP) { [unowned self] _ in
                self.logger.notice("SIGHUP received, reloading")
                self.notifyService { try $0.reloading() }
                let report = self.reload()
                self.notifyService { try $0.ready(status: report.serviceStatus) }
            }
            signals.append(hangup)
        }
        transition(to: .running)
        if let address = bound.plain {
            logger.info("listening", metadata: storeMetadata.merging(["address": "\(address)"]) { $1 })
        }
        if let address = bound.http {
            logger.info("http listening", metadata: ["address": "\(address)"])
        }
        if let address = bound.tls {
            logger.info("tls listening", metadata: storeMetadata.merging([
                "address": "\(address)", "mtls": "\(tlsContext?.requiresClientCertificate ?? false)",
            ]) { $1 })
        }
        return bound
    }

    /// Runs the loop until shutdown completes; true if the loop closed cleanly.
    func runLoop() -> Bool {
        loop.run()
        cluster?.fabric.stop()
        store.close()
        do {
            try loop.close()
            return true
        } catch {
            logger.error("loop closed with open handles", metadata: ["handles": "\(loop.openHandleCount)"])
            return false
        }
    }

    private func accept(_ error: UVError?, from listener: TCPListener, tls: Bool) {
        assertOnLoopThread()
        if let error {
            counters.acceptErrors[error.name, default: 0] += 1
            logAcceptFailure(error)
            return
        }
        guard let tcp = try? listener.accept() else { return }
        guard case .running = phase else {
            tcp.close()
            return
        }
        let host = tcp.peerAddress?.host
        if let host, config.proxyFrom.anyContains(host) {
            // A trusted balancer: the client's address comes in its PROXY
            // header; only the total limit applies until then.
            if connections.count + proxyHeaderWaits.count >= config.maxConnections {
                refuse(tcp, limit: .total, host: host, tls: tls)
            } else {
                awaitProxyHeader(on: tcp, tls: tls, proxy: host)
            }
            return
        }
        open(tcp, tls: tls, host: host)
    }

    /// Makes a session of an accepted connection from the client at `host`
    /// (nil: unknown) — unless a connection limit refuses it. `early`: bytes
    /// that followed a PROXY header in the same read, the session's first.
    /// `acceptedAt`: when the connection was accepted (the hello timeout
    /// runs from then, the PROXY header's wait included).
    func open(_ tcp: TCPStream, tls: Bool, host: String?, proxy: String? = nil,
              early: UnsafeRawBufferPointer? = nil, acceptedAt: UInt64? = nil) {
        if let limit = connectionLimitReached(host: host) {
            refuse(tcp, limit: limit, host: host, tls: tls)
            return
        }
        tcp.setNoDelay()
        // A peer behind a dead path is dropped by the kernel within seconds
        // (ETIMEDOUT, then the read or write error closes the session like
        // any other): presence and timer viewers follow (§3, "Liveness").
        tcp.setLiveness(config.tcpLiveness)
        guard let stream = socketStream(tcp, tls: tls) else { return }
        admit(stream, host: host, proxy: proxy, early: early, acceptedAt: acceptedAt)
    }

    /// The stream of an accepted connection: TLS on a TLS listener (its
    /// handshakes through the per-iteration gate), else plain TCP; nil
    /// (the socket closed, logged) when TLS cannot start on it.
    func socketStream(_ tcp: TCPStream, tls: Bool) -> SocketStream? {
        guard tls, let tlsContext else { return .tcp(tcp) }
        do {
            return .tls(try TLSStream(accepting: tcp, context: tlsContext, gate: handshakeGate))
        } catch {
            logger.error("cannot start TLS on a connection", metadata: ["error": "\(error)"])
            tcp.close()
            return nil
        }
    }

    /// Makes a session of a connection the limits admitted: plain TCP, TLS,
    /// or (`webSocket`) one upgraded on `GET /ws`, whose input then goes to
    /// ``receivedWebSocket(_:on:)``: the one place input is told apart by
    /// transport. `early`: the session's first bytes, already read.
    @discardableResult
    func admit(_ stream: SocketStream, host: String?, proxy: String? = nil, webSocket: WebSocketLink? = nil,
               early: UnsafeRawBufferPointer? = nil, acceptedAt: UInt64? = nil) -> Connection? {
        nextSerial += 1
        counters.connectionsAccepted += 1
        let connection = Connection(serial: nextSerial, id: "\(bootID)-\(nextSerial)", stream: stream,
                                    context: connectionContext, now: acceptedAt ?? time.now, webSocket: webSocket)
        connections[connection.serial] = connection
        if webSocket != nil { counters.webSocketOpen += 1 }
        if let host {
            connection.peerHost = host
            addresses.connectionOpened(from: host)
        }
        guard connection.start() else { return nil }
        logger.trace("connection accepted", metadata: ["conn.id": "\(connection.id)", "peer": "\(host ?? "?")",
                                                       "proxy": "\(proxy ?? "-")", "transport": "\(connection.transport)"])
        if let early, early.count > 0 { connection.receivedEarly(early) }
        return connection.state.isClosed ? nil : connection
    }

    /// Once per loop iteration, before the loop blocks, and after each group
    /// of commits: flushes now, or — when many connections wait and the last
    /// flush was very recent — arms the flush timer for
    /// `flushIntervalMicroseconds` after the last flush (write coalescing:
    /// fewer, larger writes; see ``ServerConfig``).
    private func flushSoon() {
        guard !connectionContext.dirty.isEmpty, !flushTimerArmed else { return }
        let interval = UInt64(config.flushIntervalMicroseconds) * 1_000
        guard interval > 0, connectionContext.dirty.count >= config.coalesceMinSessions, case .running = phase else {
            flushDirty()
            return
        }
        let now = Loop.hrtime
        let due = lastFlushNs &+ interval
        if now >= due {
            flushDirty(now: now)
        } else {
            flushTimerArmed = true
            flushTimer.start(afterNanoseconds: due - now) { [unowned self] in
                self.flushTimerArmed = false
                self.flushDirty()
            }
        }
    }

    /// One write per dirty session with everything queued since its last flush.
    private func flushDirty(now: UInt64 = Loop.hrtime) {
        lastFlushNs = now
        guard !connectionContext.dirty.isEmpty else { return }
        let connections = connectionContext.dirty
        connectionContext.dirty = []
        for connection in connections { connection.flush() }
    }

    /// Acts on the writer's reports (as far as the iteration's time goes:
    /// ``reportCommits()``), submits what they opened, and flushes.
    func actOnReports() {
        reportCommits()
        submitOpenBatches()
        // The replies and pushes of a commit leave now rather than after
        // whatever else this loop iteration reads and parses: they are on
        // every waiting client's critical path (A/B under 50 command
        // clients: about 5 % more commands/s, lower p99).
        flushSoon()
    }

    /// The next loop iteration's turn for work put off when a budget was
    /// spent: the rest of the commit reports (with the iteration's report
    /// time begun afresh), then the HTTP connections' waiting heads.
    private func takeNextTurn() {
        if !reportBacklog.isEmpty {
            reportTimeThisIteration = 0
            actOnReports()
        }
        if !httpTurns.isEmpty { takeHTTPTurns() }
    }

    func handle(_ message: ServerMessage) {
        assertOnLoopThread()
        switch message {
        case .committed(let commits):
            storeCommitted(commits)
            actOnReports()
        case .historyRead(let ticket, let result):
            pendingReads.removeValue(forKey: ticket)?(result)
        case .channelsRead(let ticket, let result):
            pendingChannelReads.removeValue(forKey: ticket)?(result)
        case .channelsLoaded(let ticket, let result):
            pendingLoads.removeValue(forKey: ticket)?(result)
            actOnReports()
        case .shutdownRequested:
            beginShutdown()
        case .reloadRequested(let answer):
            answer.set(reload())
        case .reloadTLS(let files, let reply):
            do {
                try reloadTLS(files)
                reply.set(.success(()))
            } catch {
                reply.set(.failure(error))
            }
        case .advanceClock(let milliseconds, let done):
            advanceClock(milliseconds: milliseconds)
            done.set(())
        case .blockLoop(let milliseconds, let started, let done):
            started?.set(())
            // By the monotonic clock, not one sleep: a signal may cut a
            // sleep short, and the caller counts on the whole span.
            let until = Loop.hrtime + UInt64(milliseconds) * 1_000_000
            while Loop.hrtime < until { usleep(1000) }
            done.set(())
        case .cluster(let event):
            handle(event)
            actOnReports()
        }
    }

    /// Moves to `next`, traced.
    func transition(to next: Phase) {
        logger.trace("server phase", metadata: ["from": "\(phase)", "to": "\(next)"])
        phase = next
        if case .running = next { connectionContext.takesInput = true } else { connectionContext.takesInput = false }
    }

    /// Entry points from libuv and the inbox run on the loop thread only:
    /// nothing here is locked.
    @inline(__always)
    func assertOnLoopThread() {
        assert(pthread_equal(loopThread, pthread_self()) != 0, "server entry point called off the loop thread")
    }

    /// Closes the server's own handles once everything else is done.
    func closeOwnHandles() {
        ownHandlesClosed = true
        listener?.close()
        tlsListener?.close()
        closeHTTP()
        handshakeGate?.close()
        flusher.close()
        flushTimer.close()
        presenceTimer.close()
        cluster?.retryTimer?.close()
        nextTurn.close()
        httpTurns = []
        sweeper.close()
        aliveTimer.close()
        scheduler.close()
        rateWakeups.close()
        helloDelays.close()
        closeProxyHeaderWaits()
        for refusal in lingeringRefusals.values { refusal.stream.close() }
        lingeringRefusals = [:]
        if !signals.isEmpty {
            // Already stopping: a second Ctrl-C or SIGTERM must not kill the
            // process once the watchers are gone (exit 0 stays exit 0).
            Signal.ignore(SIGINT)
            Signal.ignore(SIGTERM)
            Signal.ignore(SIGHUP)  // its default action ends the process
        }
        for signal in signals { signal.close() }
        signals = []
        inbox.close()
    }

    /// A server that never ran its loop to the end — never started, its
    /// start failed (a port in use), or its init threw once it was whole
    /// (loading the channels) — still closes every handle it made, stops
    /// the store and closes the loop: nothing stays open or retained.
    deinit {
        guard !ownHandlesClosed else { return }
        closeOwnHandles()
        if fabricStarted { cluster?.fabric.stop() }
        store.close()
        Self.closeLoop(loop, logger: logger)
    }

    /// Runs the close callbacks of handles closed outside a running loop,
    /// then closes the loop; logs what is still open if it cannot.
    private static func closeLoop(_ loop: Loop, logger: Logger) {
        loop.runNoWait()
        do {
            try loop.close()
        } catch {
            logger.error("loop closed with open handles", metadata: ["handles": "\(loop.openHandleCount)"])
        }
    }
}

/// Forwards inbox messages to the server (set after init; loop thread only).
private final class MessageRelay {
    var handler: ((ServerMessage) -> Void)?
}
