import Foundation
import OutaTimeProtocol

/// One `stats` reading, with the client's clock when it came.
struct TopSample {
    /// Client monotonic milliseconds at the reply.
    var atMs: UInt64
    var stats: JSONValue

    func int(_ key: String) -> Int { Int(stats[key]?.number ?? 0) }

    /// `slowest_channels`: the channels whose ticks ran late recently, worst
    /// first, as the server ranked them; nil from a server that does not
    /// report them (before issue 14).
    var slowestChannels: [SlowChannel]? {
        guard let entries = stats["slowest_channels"] else { return nil }
        // Through the protocol's own Codable type; a malformed list reads as none.
        return (try? JSONDecoder().decode([SlowChannel].self, from: JSONEncoder().encode(entries))) ?? []
    }

    /// `cluster` (cluster mode): the node and its NATS link; nil from a
    /// single server.
    var cluster: TopCluster? {
        guard let cluster = stats["cluster"], let node = cluster["node"]?.text else { return nil }
        let nats = cluster["nats"]
        func int(_ value: JSONValue?) -> Int? { value?.number.map { Int($0) } }
        var connected: Bool?
        if case .bool(let value)? = nats?["connected"] { connected = value }
        return TopCluster(node: node, channelsOwned: int(cluster["channels_owned"]) ?? 0, natsConnected: connected,
                          natsURL: nats?["url"]?.text, natsReconnects: int(nats?["reconnects"]),
                          downSeconds: int(nats?["down_s"]), ackRetries: int(nats?["ack_retries"]))
    }

    /// Whether `later` continues this reading's counters (not a restarted server).
    func isContinued(by later: TopSample) -> Bool {
        later.int("uptime_s") >= int("uptime_s") && later.int("connections_accepted") >= int("connections_accepted")
            && later.int("events_committed") >= int("events_committed")
    }
}

/// `stats`' `cluster` object as `top` shows it.
struct TopCluster: Equatable {
    var node: String
    var channelsOwned: Int
    /// Nil when the store reports no link.
    var natsConnected: Bool?
    var natsURL: String?
    var natsReconnects: Int?
    /// Seconds the link has been down; nil while up.
    var downSeconds: Int?
    var ackRetries: Int?
}

/// Rates between two readings: what `top` shows beside the counters.
struct TopRates {
    let seconds: Double
    let previous: TopSample
    let current: TopSample

    init?(from previous: TopSample, to current: TopSample) {
        guard current.atMs > previous.atMs, previous.isContinued(by: current) else { return nil }
        self.previous = previous
        self.current = current
        seconds = Double(current.atMs - previous.atMs) / 1000
    }

    /// The growth of counter `key` per second.
    func perSecond(_ key: String) -> Double { Double(max(0, current.int(key) - previous.int(key))) / seconds }

    /// Mean time one storage group took to commit over the interval, ms;
    /// nil when none committed.
    var commitMs: Double? {
        let batches = current.int("store_batches") - previous.int("store_batches")
        guard batches > 0 else { return nil }
        return Double(current.int("store_commit_us") - previous.int("store_commit_us")) / Double(batches) / 1000
    }

    /// Mean lateness of the ticks built over the interval, ms; nil without ticks.
    var tickLatenessMs: Double? {
        let ticks = current.int("ticks") - previous.int("ticks")
        guard ticks > 0 else { return nil }
        return Double(current.int("tick_lateness_total_ms") - previous.int("tick_lateness_total_ms")) / Double(ticks)
    }

    /// Connections closed per second, over every reason.
    var closesPerSecond: Double {
        func total(_ sample: TopSample) -> Int {
            guard case .object(let reasons)? = sample.stats["closes"] else { return 0 }
            return reasons.values.reduce(0) { $0 + Int($1.number ?? 0) }
        }
        return Double(max(0, total(current) - total(previous))) / seconds
    }
}

/// The busiest channels, from successive `list` pages: events per second
/// from each channel's seq, and its watchers.
struct ChannelActivity {
    struct Row: Equatable {
        var channel: String
        var eventsPerSecond: Double
        var seq: Int
        var watchers: Int
    }

    /// Channel → (seq, client ms) at its last sighting.
    private var seen: [String: (seq: Int, atMs: UInt64)] = [:]
    /// The rows of the last page, busiest first.
    private(set) var rows: [Row] = []
    /// The last page did not hold every channel (`list` has more pages).
    private(set) var partial = false

    /// Takes a `list` result read at `atMs`.
    mutating func update(list: JSONValue, atMs: UInt64) {
        var next: [String: (seq: Int, atMs: UInt64)] = [:]
        var fresh: [Row] = []
        for entry in list["channels"]?.array ?? [] {
            guard let channel = entry["channel"]?.text else { continue }
            let seq = Int(entry["seq"]?.number ?? 0)
            var rate = 0.0
            if let before = seen[channel], atMs > before.atMs, seq >= before.seq {
                rate = Double(seq - before.seq) * 1000 / Double(atMs - before.atMs)
            }
            next[channel] = (seq, atMs)
            fresh.append(Row(channel: channel, eventsPerSecond: rate, seq: seq, watchers: Int(entry["watchers"]?.number ?? 0)))
        }
        seen = next
        partial = list["next"].map { if case .null = $0 { false } else { true } } ?? false
        rows = fresh.sorted {
            ($0.eventsPerSecond, $0.watchers, $1.channel) > ($1.eventsPerSecond, $1.watchers, $0.channel)
        }
    }
}
