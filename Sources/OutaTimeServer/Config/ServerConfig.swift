import Foundation
import UV

/// Everything the server needs to start. The command line maps onto it one to
/// one; tests set the extra knobs (timeouts, limits) directly.
public struct ServerConfig: Sendable {
    /// Numeric address to listen on.
    public var host = "127.0.0.1"
    /// TCP port; 0 picks a free one (see ``ServerHandle/port``).
    public var port = 1985
    /// Where durable state is kept: SQLite in ``databasePath`` (the
    /// default), or a backend the caller opens (cluster mode).
    public var storage = StorageBackend.sqlite
    /// SQLite database file, with ``StorageBackend/sqlite``; its folder is
    /// created.
    public var databasePath = "./data/outatime.sqlite"
    /// In cluster mode, this node's name (`--node`): sent in `hello` as
    /// `node`, shown by `stats` and `/metrics`. Nil on a single server.
    public var node: String? = nil
    /// In cluster mode, ownership, forwarding and the relay of pushes
    /// between nodes (``ClusterFabric``); nil on a single server. Started
    /// by the server before it listens, stopped after its loop ends.
    public var fabric: (any ClusterFabric)? = nil
    /// In cluster mode, how long a request forwarded to a channel's owner
    /// waits for its answer before it fails with `unavailable` (longer than
    /// a takeover, 1.5–2 s, shorter than clients' usual timeouts).
    public var clusterForwardTimeoutMs = 5_000
    /// In cluster mode, how long the start waits for membership to catch up
    /// and every slot to have an owner before it listens anyway.
    public var clusterStartWaitMs = 10_000
    /// Clients must send a frame at least this often; silence for twice as
    /// long closes the connection with `idle_timeout`.
    public var heartbeatMs = 15_000
    /// Largest frame body accepted from clients, in bytes.
    public var maxFrame = 65_536
    /// TCP keepalive on every accepted client connection (plain and TLS):
    /// seconds without anything received before the first probe (0: no
    /// keepalive). With ``tcpKeepaliveIntervalSeconds`` and
    /// ``tcpKeepaliveCount`` a peer behind a dead path is dropped within
    /// idle + count × interval = 8 s when nothing is in flight to it
    /// (PROTOCOL.md §3, "Liveness").
    public var tcpKeepaliveSeconds = 4
    /// Seconds between unanswered keepalive probes.
    public var tcpKeepaliveIntervalSeconds = 1
    /// Unanswered keepalive probes after which the connection fails.
    public var tcpKeepaliveCount = 4
    /// `TCP_USER_TIMEOUT` on every accepted client connection: how long
    /// data sent to it may stay unacknowledged before the kernel fails the
    /// connection, in milliseconds; 0: the kernel's default (about 15
    /// minutes of retransmissions).
    public var tcpUserTimeoutMs = 8_000
    /// DeLorean acceleration tick interval.
    public var deloreanTickMs = 100
    /// Lap stopwatch tick interval.
    public var lapTickMs = 100
    /// Durable events kept per channel for `history` and recovery.
    public var historyLimit = 1000
    /// How long a keyed command (`idempotency_key`, protocol §6.9) is
    /// remembered for its repeats, at most (also only while its event is
    /// among the newest ``historyLimit``). A day: a client retrying
    /// through a long outage, or a script rerun the next morning, is still
    /// answered with the first outcome.
    public var idempotencyWindowS = 86_400
    /// Access tokens; nil (and no ``tokensFile``) means no authentication:
    /// everyone `operate`, every channel.
    public var tokens: [AccessToken]? = nil
    /// The tokens file (`--tokens`). Read again by every reload (SIGHUP,
    /// ``ServerHandle/reload()``); read at start too when ``tokens`` is nil
    /// (the executable reads it itself first, to refuse a bad file with
    /// exit code 64).
    public var tokensFile: String? = nil
    /// Allow listening on a non-loopback address without tokens.
    public var allowAnonymous = false
    /// TLS certificate and key (and client CA for mTLS) for the TLS
    /// listener; nil: no TLS. Needs ``tlsPort``.
    public var tls: TLSFiles? = nil
    /// Port of the TLS listener (on ``host``); nil: none. 0 picks a free one.
    public var tlsPort: Int? = nil
    /// Whether the plaintext listener on ``port`` runs (`--no-plain` clears it).
    public var plainListener = true
    /// The balancers (`--proxy-from`) whose connections begin with a PROXY
    /// protocol header (v1 or v2) naming the client: their connections must
    /// send one (within ``helloTimeoutMs``), and the client's address then
    /// stands for the connection everywhere (limits, throttle, logs). A
    /// header from any other address closes the connection. Empty: none.
    public var proxyFrom: [AddressRange] = []
    /// Allow a plaintext listener on a non-loopback address.
    public var allowPlaintext = false
    /// TLS handshake steps advanced per loop iteration at most; the others
    /// wait for the next iterations (a burst of handshakes cannot stall
    /// everyone else's traffic). A step costs at most one signature and one
    /// key exchange (not yet measured: docs/BENCHMARKS.md has no TLS figures).
    public var tlsHandshakesPerIteration = 32
    /// How long the reads of one loop iteration may take, in microseconds,
    /// before the connections still waiting to be read are read in later
    /// iterations, each once per round (`UV.ReadBudget`); the handling of
    /// committed groups has the same time (``Server/reportCommits()``).
    /// However many connections send at once, timers and ticks due
    /// meanwhile are not held up for long. 0: no limit. (Tests set 1: one
    /// read per iteration, the reports one outcome at a time.)
    public var readBudgetMicroseconds = 10_000
    /// The HTTP listener (`--http`): `/healthz`, `/readyz`; nil: none.
    public var http: HTTPEndpoint? = nil
    /// HTTP connections open at once; newer ones wait in the kernel's queue
    /// (the listener stops accepting) until one closes.
    public var maxHTTPConnections = 256
    /// HTTP connections one client IP address may hold at once (loopback
    /// counts like any address). One more is answered `503` and closed
    /// without being read, so that one address cannot hold the slots of
    /// ``maxHTTPConnections`` that everyone else's `/healthz` needs.
    public var maxHTTPConnectionsPerAddress = 16
    /// An HTTP connection's request head must arrive whole within this
    /// long: from the accept for its first head, from the head's first
    /// byte for a later one. Otherwise `408` (if part of a head came) and a
    /// close. An idle kept-alive connection between heads is closed at
    /// ``helloTimeoutMs``.
    public var httpHeadTimeoutMs = 2_000
    /// Allow the HTTP listener on a non-loopback address (`--http-public`):
    /// `/metrics` names the server's load and limits to whoever connects.
    public var httpPublic = false
    /// Serve the board's files (`GET /`, `/web/*`) from this folder instead
    /// of the copies built into the binary (`--web-root`, for developing
    /// `clients/web/`); nil: the built-in ones.
    public var webRoot: String? = nil
    /// Origins besides the page's own whose pages may open `GET /ws`
    /// (`--http-allow-origin URL`, repeatable); a request with any other
    /// `Origin` is refused `403` before upgrading.
    public var httpAllowedOrigins: [WebOrigin] = []
    /// Serve `GET /ws` on a non-loopback HTTP listener without TLS
    /// (`--allow-plain-http`): tokens in `hello` and the boards would
    /// cross the network in clear. Without it `/ws` answers `403` there
    /// (`/metrics`, `/healthz`, `/readyz` need only ``httpPublic``).
    public var allowPlainHTTP = false
    /// The HTTP listener speaks TLS (`--http-tls`: `https://`, `wss://`)
    /// with the server's certificate (``tls``).
    public var httpTLS = false
    /// A connection that has not sent `hello` within this time is closed.
    /// For TLS, the handshake counts within this time.
    public var helloTimeoutMs = 10_000
    /// Bytes queued for one connection before it is closed as a slow consumer.
    public var outputLimitBytes = 8 << 20
    /// A connection with this many bytes queued that the kernel did not take
    /// gets ticks conflated (per channel only the newest waits, sent once
    /// its output has drained) and its `message` pushes dropped with a
    /// count. Ticks and messages alone never make a slow consumer.
    public var tickBacklogBytes = 64 << 10
    /// The window of `stats`' `slowest_channels`: each channel keeps its
    /// worst tick lateness and late ticks of the current window of this
    /// length and of the one before, so a reading covers the last one to two
    /// windows (ten seconds; tests lengthen it so that nothing expires
    /// mid-test).
    public var slowChannelWindowMs = 10_000
    /// Connections the server holds at once (open or closing, plain and
    /// TLS). One more is accepted and at once sent an `error` and `bye`
    /// `server_busy`, then closed, without reading it. The default,
    /// ``derivedMaxConnections``, stays just below the process's descriptor
    /// limit, so that a full server refuses with a `bye` instead of failing
    /// to accept.
    public var maxConnections = ServerConfig.derivedMaxConnections
    /// Connections one client IP address may hold at once (loopback counts
    /// like any address); one more is refused like ``maxConnections``.
    public var maxConnectionsPerAddress = 1_000
    /// Channels the server holds at once (in memory and in the database).
    /// Creating one more (`subscribe`, `get` or `command` on a new name) is
    /// refused with `server_busy` naming `--max-channels`; requests on
    /// existing channels go on. Each channel costs about 0.5 KiB of memory
    /// and 0.3 KiB of disk before its first event.
    public var maxChannels = 100_000
    /// Channels one token may create (counted per tokens-file entry across
    /// its connections; per connection without `--tokens`) that the server
    /// still holds: a channel forgotten idle and empty gives its place
    /// back. Creating one more is refused with `quota_exceeded` naming
    /// `--max-channels-per-token`. Counted in memory: a restart starts
    /// every count at 0. 0: no limit (only ``maxChannels``).
    public var maxChannelsPerToken = 1_000
    /// Items one channel may hold: timers of a list, dispatches of a board,
    /// laps of a stopwatch. An action that would add one more is refused
    /// with `channel_full` naming `--max-channel-items`; a channel stored
    /// with more (under a higher limit) still loads and is read, and only
    /// its growth is refused. At most ``FrameBounds/maxChannelItems``, so
    /// that every snapshot fits the 16 MiB frame a client accepts.
    public var maxChannelItems = 10_000
    /// A channel without events (seq 0), subscribers or commits in flight
    /// is forgotten — dropped from memory and from the database — once it
    /// has been so for this long. It comes back, new, when next named.
    public var idleChannelMs = 60_000
    /// Failed `hello`s (a bad or missing token, tokens configured) one
    /// client IP address, or one presented token, may make per
    /// ``failedHelloWindowMs`` before it is throttled: then every `hello`
    /// counted against it, valid or not, is answered
    /// ``failedHelloDelayMs`` × 2^(failures − this) late, at most
    /// ``maxFailedHelloDelayMs`` (``HelloThrottle``). Nothing is refused for
    /// others' failures: a valid token is always accepted. A successful
    /// `hello` does not reset the count. 0: never throttled.
    public var maxFailedHellos = 10
    /// A `hello` refused for its token is answered (error, then `bye`) this
    /// long later, on a timer: each guess costs the guesser that long,
    /// while the server goes on; also the first throttled delay. 0: at once.
    public var failedHelloDelayMs = 250
    /// The longest a throttled `hello` waits (a valid token's worst wait).
    public var maxFailedHelloDelayMs = 4_000
    /// The window of ``maxFailedHellos``: it starts at an address's first
    /// failure and lasts this long (a minute; tests shorten it).
    public var failedHelloWindowMs = 60_000
    /// Requests (frames) one connection may send per
    /// ``requestRateWindowMs``. Beyond that the server stops reading the
    /// connection until the window ends: the requests wait (in order) in the
    /// kernel's buffers and are answered later; nothing is refused. 0: no
    /// limit.
    public var maxRequestsPerSecond = 5_000
    /// The window of ``maxRequestsPerSecond`` (a second; tests shorten it).
    public var requestRateWindowMs = 1_000
    /// Subscriptions one connection may hold.
    public var maxSubscriptionsPerSession = 1024
    /// Upper bound on a graceful shutdown; what is left is then closed hard.
    public var shutdownTimeoutMs = 5_000
    /// How long a closing connection waits for the peer's EOF after `bye`.
    public var lingerMs = 2_000

    /// Write coalescing: when a flush would write to at least
    /// ``coalesceMinSessions`` connections and the previous flush was less
    /// than this long ago, output waits until this long after it, so that
    /// bursts (one broadcast after another) go out in fewer, larger writes.
    /// 0 flushes every loop iteration. Small flushes (a reply, a few
    /// connections) do not wait, unless a coalesced flush is already pending:
    /// then they leave with it, at most this long later.
    public var flushIntervalMicroseconds = 250
    /// The fewest connections with pending output for which a flush may wait.
    public var coalesceMinSessions = 16

    /// A channel with more watchers than this is crowded: its `presence` is
    /// gathered and sent as one summary per ``presenceIntervalMs`` (lists
    /// cut to this many entries, with counts), and `subscribe` lists this
    /// many watchers. Without it, every join in a channel of N watchers
    /// costs O(N) pushes and replies of O(N) entries: quadratic.
    public var presenceLimit = 100
    /// How often a crowded channel's gathered presence goes out.
    public var presenceIntervalMs = 1_000

    /// The defaults documented in the README.
    public init() {}

    /// The descriptor limit (`ulimit -n`, soft) less a reserve of
    /// min(64, limit / 2) for the database and its journal, the listeners,
    /// the loop's own descriptors, libuv's spare one and the brief
    /// descriptor of each connection being refused; between 1 and 1,000,000.
    /// Each connection holds one descriptor. The server itself holds about
    /// 20 descriptors idle and up to 10 more for SQLite readers: a quarter
    /// of a small limit (16 of 64) was too little (DescriptorLimitTests).
    public static let derivedMaxConnections: Int = {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 10_000 }
        // RLIM_INFINITY is all ones: the cap below covers it.
        let total = Int(min(UInt64(limit.rlim_cur), 2_000_000))
        return max(1, min(1_000_000, total - min(64, total / 2)))
    }()

    /// The keepalive and user timeout of accepted client connections.
    var tcpLiveness: TCPLiveness {
        TCPLiveness(keepaliveIdleSeconds: Int32(tcpKeepaliveSeconds),
                    keepaliveIntervalSeconds: Int32(tcpKeepaliveIntervalSeconds),
                    keepaliveCount: Int32(tcpKeepaliveCount), userTimeoutMs: UInt32(tcpUserTimeoutMs))
    }

    /// The connection idle limit (2 × heartbeat).
    var idleTimeoutMs: UInt64 { UInt64(heartbeatMs) * 2 }

    /// Checks the values a user can get wrong; the message names the flag.
    public func validate() throws(ConfigError) {
        func require(_ ok: Bool, _ message: String) throws(ConfigError) {
            if !ok { throw ConfigError(message: message) }
        }
        try require((0...65535).contains(port), "--port \(port) is not a TCP port (0…65535; 0 picks a free port)")
        try require(heartbeatMs >= 10, "--heartbeat-ms \(heartbeatMs) is too small (at least 10)")
        try require((0...32_767).contains(tcpKeepaliveSeconds),
                    "--tcp-keepalive-s \(tcpKeepaliveSeconds) is out of range (0…32767 seconds; 0 turns keepalive off)")
        try require((1...32_767).contains(tcpKeepaliveIntervalSeconds),
                    "--tcp-keepalive-interval-s \(tcpKeepaliveIntervalSeconds) is out of range (1…32767 seconds)")
        try require((1...127).contains(tcpKeepaliveCount),
                    "--tcp-keepalive-count \(tcpKeepaliveCount) is out of range (1…127 probes)")
        try require((0...3_600_000).contains(tcpUserTimeoutMs),
                    "--tcp-user-timeout-ms \(tcpUserTimeoutMs) is out of range (0…3600000 ms; 0: the kernel's default)")
        try require((64...FrameBounds.maxMaxFrame).contains(maxFrame),
                    "--max-frame \(maxFrame) is out of range (64…\(FrameBounds.maxMaxFrame) bytes: a published message "
                        + "re-encoded for its subscribers must fit the 16 MiB frame a client accepts)")
        try require(deloreanTickMs >= 1, "--delorean-tick-ms \(deloreanTickMs) must be at least 1")
        try require(lapTickMs >= 1, "--lap-tick-ms \(lapTickMs) must be at least 1")
        try require((0...100_000).contains(flushIntervalMicroseconds),
                    "--flush-interval-us \(flushIntervalMicroseconds) is out of range (0…100000; 0 flushes every loop iteration)")
        try require((0...1_000_000).contains(readBudgetMicroseconds),
                    "--read-budget-us \(readBudgetMicroseconds) is out of range (0…1000000; 0: no limit)")
        try require((1024...(64 << 20)).contains(tickBacklogBytes),
                    "--tick-backlog-bytes \(tickBacklogBytes) is out of range (1024…67108864 bytes)")
        try require(slowChannelWindowMs >= 1, "slowChannelWindowMs \(slowChannelWindowMs) must be at least 1")
        try require(maxConnections >= 1, "--max-connections \(maxConnections) must be at least 1")
        try require(maxConnectionsPerAddress >= 1,
                    "--max-connections-per-address \(maxConnectionsPerAddress) must be at least 1")
        try require(maxChannels >= 1, "--max-channels \(maxChannels) must be at least 1")
        try require((1...FrameBounds.maxChannelItems).contains(maxChannelItems),
                    "--max-channel-items \(maxChannelItems) is out of range (1…\(FrameBounds.maxChannelItems): above it, "
                        + "a snapshot of worst-case items could exceed the 16 MiB frame a client accepts)")
        try require((1...31_536_000).contains(idempotencyWindowS),
                    "--idempotency-window-s \(idempotencyWindowS) is out of range (1…31536000 seconds)")
        try require((1...(1_000 * 31_536_000)).contains(idleChannelMs),
                    "--idle-channel-s is out of range (1…31536000 seconds), got \(idleChannelMs) ms")
        try require(maxFailedHellos >= 0, "--max-failed-hellos \(maxFailedHellos) must be at least 0 (0: no limit)")
        try require((0...5_000).contains(failedHelloDelayMs),
                    "failedHelloDelayMs \(failedHelloDelayMs) is out of range (0…5000 ms)")
        try require((failedHelloDelayMs...60_000).contains(maxFailedHelloDelayMs),
                    "--max-failed-hello-delay-ms \(maxFailedHelloDelayMs) is out of range (\(failedHelloDelayMs)…60000 ms: "
                        + "at least the first delay, \(failedHelloDelayMs) ms)")
        try require(failedHelloWindowMs >= 1, "failedHelloWindowMs \(failedHelloWindowMs) must be at least 1")
        try require(maxRequestsPerSecond >= 0,
                    "--max-requests-per-second \(maxRequestsPerSecond) must be at least 0 (0: no limit)")
        try require(requestRateWindowMs >= 1, "requestRateWindowMs \(requestRateWindowMs) must be at least 1")
        try require(historyLimit >= 1000, "--history-limit \(historyLimit) is below the contract's minimum of 1000")
        if let tlsPort {
            try require((0...65535).contains(tlsPort), "--tls-port \(tlsPort) is not a TCP port (0…65535; 0 picks a free port)")
            try require(tls != nil, "--tls-port needs --tls-cert FILE and --tls-key FILE")
        } else {
            try require(tls == nil || httpTLS, "--tls-cert and --tls-key need --tls-port PORT (the TLS listener) or --http-tls")
        }
        if httpTLS {
            try require(http != nil, "--http-tls needs --http HOST:PORT (the listener it secures)")
            try require(tls != nil, "--http-tls needs --tls-cert FILE and --tls-key FILE (the certificate it serves)")
        }
        try require(maxHTTPConnectionsPerAddress >= 1,
                    "--http-max-connections-per-address \(maxHTTPConnectionsPerAddress) must be at least 1")
        try require((1...60_000).contains(httpHeadTimeoutMs),
                    "httpHeadTimeoutMs \(httpHeadTimeoutMs) is out of range (1…60000 ms)")
        try require(maxChannelsPerToken >= 0,
                    "--max-channels-per-token \(maxChannelsPerToken) must be at least 0 (0: no limit)")
        if let http, !Self.isLoopback(http.host), !httpPublic {
            throw ConfigError(message: "refusing --http on non-loopback address \(http.host): /metrics, /healthz and "
                + "/readyz would answer anyone who can connect (the server's load, limits and version). Keep it on "
                + "127.0.0.1 (--http 127.0.0.1:9090, or a bare port), or pass --http-public to accept that.")
        }
        if let webRoot {
            var isFolder: ObjCBool = false
            try require(FileManager.default.fileExists(atPath: webRoot, isDirectory: &isFolder) && isFolder.boolValue,
                        "--web-root \(webRoot) is not a folder; give the folder that holds index.html (clients/web)")
        }
        try require(plainListener || tlsPort != nil, "--no-plain needs a TLS listener (--tls-port, --tls-cert, --tls-key)")
        try require(tlsHandshakesPerIteration >= 1, "tlsHandshakesPerIteration \(tlsHandshakesPerIteration) must be at least 1")
        if let tokens {
            try checkCertificateEntries(TokenTable(tokens), file: tokensFile)
        }
        if tokens == nil && tokensFile == nil && !Self.isLoopback(host) && !allowAnonymous {
            throw ConfigError(message: "refusing to listen on non-loopback address \(host) without --tokens: "
                + "anyone could operate the boards. Pass --tokens FILE, or --allow-anonymous to accept that.")
        }
        if plainListener && !Self.isLoopback(host) && !allowPlaintext {
            throw ConfigError(message: "refusing a plaintext listener on non-loopback address \(host): tokens and "
                + "boards would cross the network in clear. Serve TLS only (--tls-port PORT --tls-cert FILE "
                + "--tls-key FILE --no-plain), or pass --allow-plaintext to accept that.")
        }
    }

    /// Refuses a tokens table with `certificate_subject` entries when the
    /// server checks no client certificates (no `--tls-client-ca`): those
    /// entries could never admit anyone, which is a mistake worth stopping
    /// for (at start, and at a reload, which then keeps the old tokens).
    func checkCertificateEntries(_ table: TokenTable, file: String?) throws(ConfigError) {
        guard tls?.clientCAFile == nil,
              let index = table.entries.firstIndex(where: { if case .certificateSubject = $0.key { true } else { false } })
        else { return }
        let source = file.map { "tokens file \($0)" } ?? "tokens"
        throw ConfigError(message: "\(source): entry \(index + 1) of \(table.entries.count) ('\(table.entries[index].name)') "
            + "maps a certificate subject, but the server checks no client certificates: add --tls-client-ca FILE "
            + "(with --tls-port, --tls-cert, --tls-key), or give the entry a 'token'")
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }
}

/// The PEM files of the server's TLS identity.
public struct TLSFiles: Sendable, Equatable {
    /// The server's certificate, followed by any intermediates.
    public var certificateFile: String
    /// The certificate's private key.
    public var privateKeyFile: String
    /// With it, clients must present a certificate issued by one of these
    /// CAs (mutual TLS).
    public var clientCAFile: String?

    /// Creates the set of files.
    public init(certificateFile: String, privateKeyFile: String, clientCAFile: String? = nil) {
        self.certificateFile = certificateFile
        self.privateKeyFile = privateKeyFile
        self.clientCAFile = clientCAFile
    }
}

/// A configuration the server cannot start with.
public struct ConfigError: Error, Sendable, CustomStringConvertible {
    /// What is wrong and how to fix it.
    public let message: String
    /// Creates the error.
    public init(message: String) { self.message = message }
    public var description: String { message }
}
