/// How to connect: servers, name, reconnect policy, timeouts and the
/// connection event closures.
///
/// The defaults suit a server node: send at once (`SendAsap`, a replier
/// without it answers about 1 ms late), deliver messages from libnats'
/// global pool (one pool, per-subscription order kept, no thread per
/// subscription), reconnect forever.
public struct NATSConnectionOptions: Sendable {
    /// Server URLs, `nats://host:port`; libnats picks among them and fails over.
    public var servers: [String]
    /// The connection's name, shown by the server (`connz`); nil for none.
    public var name: String?
    /// Flush every publish at once instead of batching in the flusher.
    public var sendAsap = true
    /// Deliver messages through libnats' global thread pool.
    public var globalMessageDelivery = true
    /// Reconnect attempts per server; -1 means forever.
    public var maxReconnect = -1
    /// The wait between reconnect attempts to the same server.
    public var reconnectWait: Duration = .milliseconds(250)
    /// Bound on connecting to one server (TCP, INFO and CONNECT).
    public var connectTimeout: Duration = .seconds(2)
    /// How often libnats pings the server; with ``maxPingsOut`` unanswered
    /// the connection counts as lost (a frozen server keeps its socket open,
    /// so only missed pings reveal it). libnats' default: 2 minutes.
    public var pingInterval: Duration = .seconds(120)
    /// Unanswered pings after which the connection counts as lost.
    public var maxPingsOut = 2
    /// Fail requests (JetStream publishes and API calls) waiting for an
    /// answer when the connection drops, instead of letting them run out
    /// their timeout.
    public var failRequestsOnDisconnect = false
    /// Called on a libnats thread when the connection drops (it then reconnects).
    public var onDisconnected: (@Sendable () -> Void)?
    /// Called on a libnats thread when the connection is back.
    public var onReconnected: (@Sendable () -> Void)?
    /// Called on a libnats thread, once, when the connection is closed for good.
    public var onClosed: (@Sendable () -> Void)?

    /// Options for `servers`, each a `nats://host:port` URL.
    public init(servers: [String], name: String? = nil) {
        self.servers = servers
        self.name = name
    }

    /// Options for a comma-separated list, `nats://h:p,nats://h:p`.
    public init(urls: String, name: String? = nil) throws(NATSError) {
        let servers = urls.split(separator: ",").map { $0.trimmingWhitespace() }.filter { !$0.isEmpty }
        guard !servers.isEmpty else { throw .invalidArgument("server list '\(urls)' names no server") }
        for server in servers where !server.hasPrefix("nats://") && !server.hasPrefix("tls://") {
            throw .invalidArgument("server URL '\(server)' in '\(urls)' must start with nats:// or tls://")
        }
        self.init(servers: servers, name: name)
    }
}

extension Substring {
    func trimmingWhitespace() -> String {
        String(drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }
}

extension Duration {
    /// Whole milliseconds, at least 1 for a positive duration (libnats' unit).
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        let ms = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        return ms == 0 && self > .zero ? 1 : ms
    }
}
