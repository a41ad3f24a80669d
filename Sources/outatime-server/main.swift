import ArgumentParser
import Foundation
import Logging
import OutaTimeProtocol
import OutaTimeServer

/// `outatime-server`: the OutaTime state-sync server.
struct OutaTimeServerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outatime-server",
        abstract: "Serve OutaTime's shared boards (DeLorean, starport, timers, laps) over TCP.",
        discussion: """
            Clients speak protocol v1 (4-byte big-endian length + JSON object; see \
            protocol/PROTOCOL.md), in plain TCP and/or TLS. State is kept in a SQLite database; \
            the server prints 'listening on HOST:PORT' (plain) and 'tls listening on HOST:PORT' \
            (TLS) when ready and stops cleanly on Ctrl-C or SIGTERM. SIGHUP reloads the --tokens \
            file and the TLS certificate, key and client CAs without a restart. Under systemd \
            (Type=notify, the unit 'make install' installs) it reports READY=1 once listening, \
            RELOADING=1 and READY=1 around a reload and STOPPING=1 on SIGTERM to $NOTIFY_SOCKET.

            Examples:
              outatime-server                          # 127.0.0.1:1985, ./data
              outatime-server --port 0 --db /tmp/t.db  # any free port (printed)
              outatime-server --host 0.0.0.0 --tokens tokens.json \\
                --tls-port 1986 --tls-cert server.pem --tls-key server.key --no-plain
              kill -HUP <pid>                          # re-read tokens.json and the TLS files
            """,
        version: OutaTimeVersion.versionLine
    )

    @Option(help: """
        Numeric address to listen on. A non-loopback address needs --tokens (or --allow-anonymous), \
        and a plaintext listener there needs --allow-plaintext (or use --no-plain with TLS).
        """)
    var host = "127.0.0.1"

    @Option(help: "TCP port of the plaintext listener; 0 picks any free port (the real one is printed).")
    var port = 1985

    @Option(help: ArgumentHelp("""
        TCP port of a TLS listener on --host, beside the plaintext one (or instead of it with \
        --no-plain); 0 picks any free port. Needs --tls-cert and --tls-key.
        """, valueName: "port"))
    var tlsPort: Int?

    @Option(help: ArgumentHelp("PEM file with the server's TLS certificate, followed by any intermediate certificates.", valueName: "file"))
    var tlsCert: String?

    @Option(help: ArgumentHelp("PEM file with the private key of --tls-cert.", valueName: "file"))
    var tlsKey: String?

    @Option(help: ArgumentHelp("""
        PEM file of the CAs whose client certificates are accepted: TLS clients must then present one \
        (mutual TLS). A tokens-file entry with "certificate_subject" then admits that certificate without a token.
        """, valueName: "file"))
    var tlsClientCa: String?

    @Flag(help: "No plaintext listener: serve TLS only (on --tls-port).")
    var noPlain = false

    @Option(help: ArgumentHelp("""
        Serve HTTP on HOST:PORT ([IPv6]:PORT, or a bare PORT on 127.0.0.1; 0 picks a free port, printed as \
        'http listening on HOST:PORT'): GET /metrics (Prometheus text format), GET /healthz (200 while the \
        store writer is not failing and, with --cluster, its NATS link is up; else 503 naming the cause) and \
        GET /readyz (200 while running, 503 while shutting down or while the NATS link is down), and \
        GET /ws: the protocol over WebSocket for browsers (PROTOCOL.md, "WebSocket transport"). \
        Off by default. A non-loopback address needs --http-public. Each client address may hold \
        --http-max-connections-per-address connections; a request head must arrive whole within 2 s.
        """, valueName: "host:port"))
    var http: String?

    @Flag(help: """
        Allow --http on a non-loopback address (0.0.0.0, a public IP): anyone who can connect then reads \
        /metrics (load, limits, version). Prefer 127.0.0.1 and a scraper on the same host; with this flag, \
        firewall the port to your monitoring.
        """)
    var httpPublic = false

    @Option(help: ArgumentHelp("""
        HTTP connections one client IP address may hold at once (127.0.0.1 counts like any address). \
        One more is answered 503 and closed, so one address cannot take the slots others' /healthz needs.
        """, valueName: "n"))
    var httpMaxConnectionsPerAddress = 16

    @Option(help: ArgumentHelp("""
        Serve the board (GET / and /web/*, on --http) from this folder instead of the copy built into \
        the binary: for developing clients/web/ (reload the page to see an edit). Only files under DIR \
        are served.
        """, valueName: "dir"))
    var webRoot: String?

    @Option(name: .customLong("http-allow-origin"), help: ArgumentHelp("""
        Let pages from this origin open /ws, besides pages the --http listener serves itself: \
        scheme://host[:port], e.g. https://boards.example or http://localhost:5173; repeat for several. \
        A /ws request whose Origin header names any other origin is refused 403.
        """, valueName: "url"))
    var httpAllowOrigin: [String] = []

    @Flag(help: """
        Serve /ws on a non-loopback --http address (with --http-public) without TLS: tokens and boards \
        then cross the network in clear. Without it, /ws there answers 403 (/metrics, /healthz and \
        /readyz need only --http-public). Prefer --http-tls.
        """)
    var allowPlainHttp = false

    @Flag(help: """
        Serve the --http listener over TLS (https://, wss://HOST:PORT/ws) with --tls-cert and --tls-key \
        (--tls-port is then optional). Browsers need a certificate they trust for the name in the URL.
        """)
    var httpTls = false
    @Option(name: .customLong("proxy-from"), help: ArgumentHelp("""
        Trust PROXY protocol headers (v1 or v2: haproxy 'send-proxy' / 'send-proxy-v2') from this \
        balancer address or CIDR network (10.0.0.5, 10.0.0.0/8, 2001:db8::/32); repeat for several. \
        Connections from it must begin with a header, on the plaintext, the TLS (before the \
        handshake) and the --http listener (before the request; before TLS with --http-tls), within \
        the hello timeout; the client address it names then counts for \
        --max-connections-per-address, --max-failed-hellos and the logs. A header from any other \
        address, or a malformed one, closes the connection with a log line. Without it, no header \
        is trusted. README.md, "Behind a balancer", has an haproxy example.
        """, valueName: "cidr"))
    var proxyFrom: [String] = []

    @Flag(help: "Allow a plaintext listener on a non-loopback --host (tokens and boards cross the network in clear).")
    var allowPlaintext = false

    @Option(help: ArgumentHelp("SQLite database file; its folder is created if missing. One server at a time: PATH.lock beside it refuses a second. Not used with --cluster.", valueName: "path"))
    var db = "./data/outatime.sqlite"

    @OptionGroup(title: "Cluster mode (NATS JetStream; docs/CLUSTER.md)")
    var clusterOptions: ClusterOptions

    @Option(help: ArgumentHelp("Heartbeat interval clients must keep; silence for twice as long closes the connection.", valueName: "ms"))
    var heartbeatMs = 15_000

    @Option(name: .customLong("tcp-keepalive-s"), help: ArgumentHelp("""
        TCP keepalive on client connections: seconds without anything received before the kernel \
        probes the peer (0: off). With the interval and count below, a client behind a dead path is \
        dropped (presence 'left', its countdowns stop) within idle + count × interval seconds when \
        nothing is in flight to it; default 4 + 4 × 1 = 8 s. Satellite or lossy links: 15.
        """, valueName: "seconds"))
    var tcpKeepaliveSeconds = 4

    @Option(name: .customLong("tcp-keepalive-interval-s"), help: ArgumentHelp(
        "Seconds between unanswered keepalive probes. Satellite or lossy links: 5.", valueName: "seconds"))
    var tcpKeepaliveIntervalSeconds = 1

    @Option(name: .customLong("tcp-keepalive-count"), help: ArgumentHelp(
        "Unanswered keepalive probes after which a client connection is dropped.", valueName: "n"))
    var tcpKeepaliveCount = 4

    @Option(name: .customLong("tcp-user-timeout-ms"), help: ArgumentHelp("""
        TCP_USER_TIMEOUT on client connections: a client that acknowledges nothing sent to it for this \
        long is dropped, instead of after the kernel's ~15 minutes of retransmissions (0: kernel default). \
        Keep it several round trips above the worst RTT; satellite or lossy links: 30000.
        """, valueName: "ms"))
    var tcpUserTimeoutMs = 8_000

    @Option(help: ArgumentHelp("""
        Largest frame body accepted from a client, in bytes (64…\(FrameBounds.maxMaxFrame): a published \
        message, written again for its subscribers, must fit the 16 MiB frame a client accepts).
        """, valueName: "bytes"))
    var maxFrame = 65_536

    @Option(help: ArgumentHelp("DeLorean acceleration tick interval (1 mph per tick).", valueName: "ms"))
    var deloreanTickMs = 100

    @Option(help: ArgumentHelp("Lap stopwatch tick interval.", valueName: "ms"))
    var lapTickMs = 100

    @Option(help: ArgumentHelp("""
        A connection with more than this many bytes queued that the kernel did not take (its reader \
        is behind) gets ticks conflated: per channel only the newest tick waits until its output drains; its message pushes are dropped with a count (a \
        'dropped' push once it drains). Ticks and messages never close a slow connection.
        """, valueName: "bytes"))
    var tickBacklogBytes = 65_536

    @Option(name: .customLong("flush-interval-us"), help: ArgumentHelp("""
        Write coalescing under load: a flush to many connections waits until this long after the \
        previous one, so bursts of broadcasts leave in fewer, larger writes. 0 writes every loop \
        iteration. Output to a few connections (a reply) waits only when such a flush is already \
        pending, and then at most this long.
        """, valueName: "us"))
    var flushIntervalMicroseconds = 250

    @Option(name: .customLong("read-budget-us"), help: ArgumentHelp("""
        How long one loop iteration may spend reading, and likewise acting on committed groups \
        (replies, broadcasts). Connections still waiting are read in the next iterations, each \
        once per round, and the rest of the reports follows at the next iteration, so timers and \
        ticks are not held up however many connections send at once. 0: no limit.
        """, valueName: "us"))
    var readBudgetMicroseconds = 10_000

    @Option(help: ArgumentHelp("""
        Connections held at once, plain and TLS together. One more is accepted and at once sent \
        'bye server_busy' (TLS: closed before the handshake), then closed. Default: the descriptor \
        limit (ulimit -n) less a small reserve, so a full server refuses with a bye instead of failing \
        to accept; raise 'ulimit -n' to hold more.
        """, valueName: "n"))
    var maxConnections: Int?

    @Option(help: ArgumentHelp("""
        Connections one client IP address may hold at once (127.0.0.1 counts like any address; clients \
        behind one NAT share an address). One more gets 'bye server_busy'.
        """, valueName: "n"))
    var maxConnectionsPerAddress = 1_000

    @Option(help: ArgumentHelp("""
        Channels the server holds at once (memory and database). Creating one more \
        (subscribe, get or command on a new name, by role operate or admin) is answered \
        'server_busy'; existing channels go on.
        """, valueName: "n"))
    var maxChannels = 100_000

    @Option(help: ArgumentHelp("""
        Channels one token may create (counted per tokens-file entry over all its connections; per \
        connection without --tokens) among those the server holds. One more is refused \
        'quota_exceeded'; a channel forgotten idle and empty frees its place. Counts start at 0 \
        at each start. 0: no limit but --max-channels. A watch connection creates no channel: \
        it reads one that does not exist as new and empty.
        """, valueName: "n"))
    var maxChannelsPerToken = 1_000

    @Option(help: ArgumentHelp("""
        Items one channel may hold: timers of a list, dispatches of a board, laps of a stopwatch. \
        An action that would add one more is refused 'channel_full'; a channel stored with more \
        (under a higher limit) still loads and is read, only its growth is refused. At most \
        \(FrameBounds.maxChannelItems), so that every snapshot fits the 16 MiB frame a client accepts.
        """, valueName: "n"))
    var maxChannelItems = 10_000

    @Option(help: ArgumentHelp("""
        Seconds after which a channel without events, subscribers or commits in flight \
        is forgotten (dropped from memory and the database); it comes back new when named.
        """, valueName: "s"))
    var idleChannelS = 60

    @Option(help: ArgumentHelp("""
        Failed hellos (a bad or missing token, with --tokens; each answered 250 ms late) one client \
        IP address, or one presented token, may make per minute (counted from its first failure) \
        before it is throttled: then every hello from that address or with that token, valid or not, \
        is answered late, 250 ms doubling with each further failure up to --max-failed-hello-delay-ms. \
        A valid token is never refused, only delayed (clients behind one NAT or balancer share an \
        address: see --proxy-from). 0: never throttled.
        """, valueName: "n"))
    var maxFailedHellos = 10

    @Option(help: ArgumentHelp("""
        The longest a throttled hello waits for its answer (see --max-failed-hellos): a valid \
        user's worst wait while others fail from the same address (250…60000).
        """, valueName: "ms"))
    var maxFailedHelloDelayMs = 4_000

    @Option(help: ArgumentHelp("""
        Requests one connection may send per second. Beyond that the server stops reading the \
        connection until the second ends: its requests wait in order and are answered later, \
        nothing is refused; other connections are unaffected. 0: no limit.
        """, valueName: "n"))
    var maxRequestsPerSecond = 5_000

    @Option(help: ArgumentHelp("Durable events kept per channel for history and recovery (at least 1000).", valueName: "n"))
    var historyLimit = 1000

    @Option(help: ArgumentHelp("""
        How long a command's idempotency_key is remembered, at most (and only while its event is among \
        the channel's newest --history-limit): a repeat within it is answered with the first outcome \
        and applied no second time (1…31536000).
        """, valueName: "s"))
    var idempotencyWindowS = 86_400

    @Option(help: ArgumentHelp("""
        JSON file of access tokens; clients must then send one in hello. Each entry: \
        {"token": "...", "name": "Marty", "role": "watch|operate|admin"}, plus optionally \
        "channels": ["starport/*", "timers/hill-valley"] to limit the token to those channels \
        (patterns: KIND/NAME, KIND/*, or * for all). Instead of "token", "sha256" gives the token's \
        SHA-256, or, with --tls-client-ca, "certificate_subject": "CN=board-1,O=Hill Valley" admits a \
        client whose certificate has exactly that subject without a token (the form \
        'openssl x509 -noout -subject -nameopt RFC2253' prints). Without --tokens every connection may operate. \
        SIGHUP re-reads the file: new connections use it at once; a connection whose token was \
        removed gets 'bye unauthorized'; a bad file is logged and the old tokens stay. \
        README.md, "Tokens and roles", has the details.
        """, valueName: "file"))
    var tokens: String?

    @Flag(help: "Allow a non-loopback --host without --tokens (anyone who can connect may operate).")
    var allowAnonymous = false

    @Option(help: ArgumentHelp("Log level: trace, debug, info, notice, warning, error, critical. Logs go to stderr.", valueName: "level"))
    var logLevel = "info"

    @Option(help: ArgumentHelp("""
        Log format: text (one readable line; a value holding a space, '=', a quote or a control character \
        is quoted and escaped) or json (one object a line: ts, level, logger, msg, then the metadata keys \
        such as conn.id, channel, reason). Both escape control and Unicode format characters.
        """, valueName: "format"))
    var logFormat = "text"

    func makeConfig() throws -> ServerConfig {
        var config = ServerConfig()
        config.host = host
        config.port = port
        config.databasePath = db
        config.heartbeatMs = heartbeatMs
        config.maxFrame = maxFrame
        config.tcpKeepaliveSeconds = tcpKeepaliveSeconds
        config.tcpKeepaliveIntervalSeconds = tcpKeepaliveIntervalSeconds
        config.tcpKeepaliveCount = tcpKeepaliveCount
        config.tcpUserTimeoutMs = tcpUserTimeoutMs
        config.deloreanTickMs = deloreanTickMs
        config.lapTickMs = lapTickMs
        config.flushIntervalMicroseconds = flushIntervalMicroseconds
        config.readBudgetMicroseconds = readBudgetMicroseconds
        config.tickBacklogBytes = tickBacklogBytes
        config.historyLimit = historyLimit
        config.idempotencyWindowS = idempotencyWindowS
        if let maxConnections { config.maxConnections = maxConnections }
        config.maxConnectionsPerAddress = maxConnectionsPerAddress
        config.maxChannels = maxChannels
        config.maxChannelsPerToken = maxChannelsPerToken
        config.httpPublic = httpPublic
        config.maxHTTPConnectionsPerAddress = httpMaxConnectionsPerAddress
        config.webRoot = webRoot
        config.allowPlainHTTP = allowPlainHttp
        config.httpTLS = httpTls
        do {
            config.httpAllowedOrigins = try httpAllowOrigin.map { origin throws(ConfigError) in
                try WebOrigin.parse(allowOrigin: origin)
            }
        } catch {
            throw ValidationError(error.message)
        }
        config.maxChannelItems = maxChannelItems
        config.maxFailedHellos = maxFailedHellos
        config.maxFailedHelloDelayMs = maxFailedHelloDelayMs
        config.maxRequestsPerSecond = maxRequestsPerSecond
        guard (1...31_536_000).contains(idleChannelS) else {
            throw ValidationError("--idle-channel-s \(idleChannelS) is out of range (1…31536000 seconds)")
        }
        config.idleChannelMs = idleChannelS * 1000
        config.allowAnonymous = allowAnonymous
        config.allowPlaintext = allowPlaintext
        config.plainListener = !noPlain
        do {
            config.proxyFrom = try proxyFrom.map(AddressRange.init)
        } catch {
            throw ValidationError(error.message)
        }
        if let http {
            do {
                config.http = try HTTPEndpoint.parse(http)
            } catch {
                throw ValidationError(error.message)
            }
        }
        config.tlsPort = tlsPort
        if tlsCert != nil || tlsKey != nil || tlsClientCa != nil {
            guard let tlsCert, let tlsKey else {
                throw ValidationError("--tls-cert and --tls-key go together (and --tls-client-ca needs both)")
            }
            config.tls = TLSFiles(certificateFile: tlsCert, privateKeyFile: tlsKey, clientCAFile: tlsClientCa)
        }
        if let tokens {
            do {
                // Read here so a bad file is a usage error (exit 64); the
                // server re-reads `tokensFile` on SIGHUP.
                config.tokens = try TokenTable.load(from: tokens).entries
                config.tokensFile = tokens
            } catch {
                throw ValidationError(error.message)
            }
        }
        if let cluster = try clusterOptions.settings() {
            ClusterOptions.apply(cluster, to: &config)
        }
        do {
            try config.validate()
        } catch {
            throw ValidationError(error.message)
        }
        return config
    }

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level '\(logLevel)' is not one of trace, debug, info, notice, warning, error, critical")
        }
        guard ["text", "json"].contains(logFormat) else {
            throw ValidationError("--log-format '\(logFormat)' is not one of text, json")
        }
        if clusterOptions.cluster == nil { try Self.validateDatabasePath(db) }
        _ = try makeConfig()
    }

    /// `--db` must name a file: not empty, not a folder, and no part of its
    /// folder may be a file (SQLite and Foundation would fail later with
    /// messages that name neither the flag nor the path).
    static func validateDatabasePath(_ path: String) throws {
        guard !path.isEmpty else { throw ValidationError("--db is empty: give the database file's path, e.g. ./data/outatime.sqlite") }
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue {
            throw ValidationError("--db \(path) is a folder: give a file's path, e.g. \(path.hasSuffix("/") ? path : path + "/")outatime.sqlite")
        }
        var folder = URL(fileURLWithPath: path).deletingLastPathComponent()
        while folder.path != "/" {
            if FileManager.default.fileExists(atPath: folder.path, isDirectory: &isFolder) {
                guard isFolder.boolValue else {
                    throw ValidationError("--db \(path): \(folder.path) is a file, not a folder")
                }
                break
            }
            folder = folder.deletingLastPathComponent()
        }
    }

    func run() throws {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        let json = logFormat == "json"
        LoggingSystem.bootstrap { label in
            if json {
                var handler = JSONLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
            var handler = TextLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "outatime")
        ServerRunner.hardenProcess(logger: logger)
        var config = try makeConfig()
        let clean: Bool
        do {
            if let cluster = try clusterOptions.settings() {
                try ClusterOptions.join(cluster, config: &config, logger: logger)
            }
            func announce(_ prefix: String, _ host: String, _ port: Int) {
                let shown = host.contains(":") ? "[\(host)]" : host
                // Unbuffered: scripts and tests wait for this line on a pipe.
                FileHandle.standardOutput.write(Data("\(prefix)listening on \(shown):\(port)\n".utf8))
            }
            clean = try ServerRunner.run(config: config, logger: logger,
                                         onListening: { announce("", $0, $1) },
                                         onTLSListening: { announce("tls ", $0, $1) },
                                         onHTTPListening: { announce("http ", $0, $1) })
        } catch {
            FileHandle.standardError.write(Data("outatime-server: error: cannot start: \(error)\n".utf8))
            throw ExitCode(1)
        }
        if !clean { throw ExitCode(3) }
    }
}

OutaTimeServerCommand.main()
