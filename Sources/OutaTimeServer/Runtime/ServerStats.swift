import OutaTimeProtocol
import Foundation

/// Counters reported by `stats`; plain integers owned by the loop thread.
struct ServerCounters {
    var connectionsAccepted = 0
    var framesIn = 0
    var framesOut = 0
    var bytesIn = 0
    var bytesOut = 0
    var messagesPublished = 0
    var deliveries = 0
    var eventsCommitted = 0
    /// `command` requests run against a channel's state (accepted or
    /// refused by its rules).
    var commands = 0
    var slowConsumerCloses = 0
    var closesByReason: [String: Int] = [:]
    /// Connections refused with `bye` `server_busy` (or, on the TLS
    /// listener, closed before the handshake), by the limit they hit:
    /// `max_connections`, `max_connections_per_address`.
    var connectionsRefused: [String: Int] = [:]
    /// Accepts that failed and reached the server (libuv drains the backlog
    /// itself when descriptors run out while its spare one is free).
    var acceptErrors: [String: Int] = [:]
    /// The HTTP listener: requests answered, heads refused (4xx/5xx from
    /// the parser), connections closed at accept while draining, times
    /// accepting paused at ``ServerConfig/maxHTTPConnections``,
    /// connections timed out, connections answered `503` at accept for
    /// their address's cap (``ServerConfig/maxHTTPConnectionsPerAddress``).
    var httpRequests = 0
    var httpRefusedPerAddress = 0
    var httpRefusedHeads = 0
    var httpRefused = 0
    var httpAcceptPauses = 0
    var httpTimeouts = 0
    /// `GET /ws`: connections upgraded to WebSocket connections, requests
    /// refused before upgrading (origin, host, URL, handshake), and the
    /// WebSocket connections open now (they count among the connections too).
    var webSocketUpgrades = 0
    var webSocketRefused = 0
    var webSocketOpen = 0
    /// Frames turned into WebSocket messages: once per frame however many
    /// WebSocket connections it goes to (``Frame/webSocketMessage``).
    var webSocketEncodes = 0
    /// Channel creations refused at ``ServerConfig/maxChannels``.
    var channelsRefused = 0
    /// Channel creations refused at ``ServerConfig/maxChannelsPerToken``.
    var channelsOverQuota = 0
    /// Idle empty channels forgotten (``ServerConfig/idleChannelMs``).
    var channelsForgotten = 0
    /// Actions refused `channel_full` at ``ServerConfig/maxChannelItems``.
    var channelItemsRefused = 0
    /// `hello`s refused for a bad or missing token (tokens configured).
    var hellosFailed = 0
    /// `hello`s answered late because their address or token had failed
    /// more than ``ServerConfig/maxFailedHellos`` times (``HelloThrottle``).
    var hellosThrottled = 0
    /// Connections closed for their PROXY header: malformed or missing
    /// from a `--proxy-from` balancer, or sent from any other address.
    var proxyHeadersRefused = 0
    /// Times a connection's reading was paused for going over
    /// ``ServerConfig/maxRequestsPerSecond``.
    var requestRatePauses = 0
    /// `tick` pushes built (one per channel tick, whatever the subscriber count).
    var ticks = 0
    /// Ticks a slow connection never got: a newer one of the same channel
    /// replaced them while its output drained (conflation).
    var ticksConflated = 0
    /// `message` pushes not queued to a connection whose output was backed
    /// up (each reported to it in a `dropped` push).
    var messagesDropped = 0
    /// Times the handling of committed groups went on in a later loop
    /// iteration, its time spent (``Server/reportCommits()``).
    var reportsDeferred = 0
    /// Ticks built more than ``lateTickMs`` after they were due (the loop was busy).
    var ticksLate = 0
    /// The most a tick was built after it was due, in ms.
    var tickLatenessMaxMs: UInt64 = 0
    /// The sum of every tick's lateness, in ms (a mean over any interval
    /// from two readings).
    var tickLatenessTotalMs: UInt64 = 0

    /// A tick built more than this many ms after it was due counts as late
    /// (`ticks_late`, and per channel in `slowest_channels`): a few
    /// milliseconds are the loop's ordinary jitter, 50 is a frame a viewer
    /// can see stutter.
    static let lateTickMs: UInt64 = 50

    /// Counts a tick built `latenessMs` after it was due.
    mutating func countTick(latenessMs late: UInt64) {
        ticks += 1
        if late > Self.lateTickMs { ticksLate += 1 }
        tickLatenessMaxMs = max(tickLatenessMaxMs, late)
        tickLatenessTotalMs &+= late
    }
}

/// The `stats` result (snake_case on the wire).
struct StatsResult: Encodable {
    var server: String
    var uptimeS: Int
    var connections: Int
    var sessionsReady: Int
    var connectionsAccepted: Int
    var channels: Int
    var subscriptions: Int
    var framesIn: Int
    var framesOut: Int
    var bytesIn: Int
    var bytesOut: Int
    var messagesPublished: Int
    var deliveries: Int
    var eventsCommitted: Int
    var commands: Int
    var storeBatches: Int
    var storeLargestBatch: Int
    var storeBacklog: Int
    /// Microseconds the store writer spent committing groups (fsync included).
    var storeCommitUs: Int
    var storeTextBytes: Int
    var slowConsumerCloses: Int
    var ticks: Int
    var ticksLate: Int
    var ticksConflated: Int
    var messagesDropped: Int
    /// Reads the loop put off to a later iteration (``ServerConfig/readBudgetMicroseconds``).
    var readsDeferred: Int
    /// Times the handling of committed groups went on in a later iteration.
    var reportsDeferred: Int
    var tickLatenessMaxMs: UInt64
    var tickLatenessTotalMs: UInt64
    /// At most ``Server/slowestChannelsShown`` channels of the connection's
    /// scope whose ticks ran late recently, worst first.
    var slowestChannels: [SlowChannel]
    var closes: [String: Int]
    var connectionsRefused: [String: Int]
    var acceptErrors: [String: Int]
    var maxConnections: Int
    var maxConnectionsPerAddress: Int
    var channelsRefused: Int
    var channelsOverQuota: Int
    var maxChannelsPerToken: Int
    var channelsForgotten: Int
    var maxChannels: Int
    var channelItemsRefused: Int
    var maxChannelItems: Int
    /// `requests`, `refused_heads`, `refused_connections`, `refused_per_address`,
    /// `accept_pauses`, `timeouts`, `open` (absent without `--http`).
    var http: [String: Int]?
    var hellosFailed: Int
    var hellosThrottled: Int
    var proxyHeadersRefused: Int
    var maxFailedHellos: Int
    var requestRatePauses: Int
    var maxRequestsPerSecond: Int
    var rssBytes: Int
    /// This node, its store's NATS link and the channels it owns (absent
    /// on a single server: no `--cluster`).
    var cluster: ClusterStats?

    enum CodingKeys: String, CodingKey {
        case server
        case uptimeS = "uptime_s"
        case connections
        case sessionsReady = "sessions_ready"
        case connectionsAccepted = "connections_accepted"
        case channels, subscriptions
        case framesIn = "frames_in"
        case framesOut = "frames_out"
        case bytesIn = "bytes_in"
        case bytesOut = "bytes_out"
        case messagesPublished = "messages_published"
        case deliveries
        case eventsCommitted = "events_committed"
        case commands
        case storeBatches = "store_batches"
        case storeLargestBatch = "store_largest_batch"
        case storeBacklog = "store_backlog"
        case storeCommitUs = "store_commit_us"
        case storeTextBytes = "store_text_bytes"
        case slowConsumerCloses = "slow_consumer_closes"
        case ticks
        case ticksLate = "ticks_late"
        case ticksConflated = "ticks_conflated"
        case messagesDropped = "messages_dropped"
        case readsDeferred = "reads_deferred"
        case reportsDeferred = "reports_deferred"
        case tickLatenessMaxMs = "tick_lateness_max_ms"
        case tickLatenessTotalMs = "tick_lateness_total_ms"
        case slowestChannels = "slowest_channels"
        case closes
        case connectionsRefused = "connections_refused"
        case acceptErrors = "accept_errors"
        case maxConnections = "max_connections"
        case maxConnectionsPerAddress = "max_connections_per_address"
        case channelsRefused = "channels_refused"
        case channelsOverQuota = "channels_over_quota"
        case maxChannelsPerToken = "max_channels_per_token"
        case channelsForgotten = "channels_forgotten"
        case maxChannels = "max_channels"
        case channelItemsRefused = "channel_items_refused"
        case maxChannelItems = "max_channel_items"
        case http
        case hellosFailed = "hellos_failed"
        case hellosThrottled = "hellos_throttled"
        case proxyHeadersRefused = "proxy_headers_refused"
        case maxFailedHellos = "max_failed_hellos"
        case requestRatePauses = "request_rate_pauses"
        case maxRequestsPerSecond = "max_requests_per_second"
        case rssBytes = "rss_bytes"
        case cluster
    }

    /// Resident set size from /proc/self/statm (0 where unavailable).
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
