import Foundation
import OutaTimeProtocol

/// What the `top` screen shows besides the readings.
struct TopBoard {
    var server: String
    var intervalS: Double
    var connection = "connecting…"
    var status = ""
    var showHelp = false
    /// How many busiest channels to show (0: none, `list` not polled).
    var channelRows = 5

    static let helpLines = [
        "Every --interval the server's stats are read; a rate is the growth",
        "of a counter between two readings, divided by the time between them.",
        "",
        "deliveries/s   pushes queued to subscribers (events, ticks, messages, presence)",
        "commands/s     command requests run against a channel's state",
        "events/s       durable events committed to storage",
        "commit         mean time a storage group took to commit (fsync included)",
        "tick late      mean lateness of the ticks built (max: since start)",
        "backlog        storage writes not yet committed",
        "deferred/s     reads put off to a later loop turn by the read budget",
        "               (--read-budget-us): the server is saturated, reads in turns",
        "busiest        channels by events/s (from list: the first 1000 by name)",
        "slowest        channels by their worst tick lateness over the last 10–20 s",
        "               (from stats, at most 5), with their ticks built > 50 ms late",
        "cluster        (cluster mode) the store's NATS link: up or DOWN, times it",
        "               came back, channels this node owns; its server, publishes retried",
        "",
        "?  show or hide this help (any key hides it)    q, Ctrl-C  quit",
        "Colours: off when NO_COLOR is set (no-color.org).",
    ]
}

/// Numbers for people: `12`, `3.4`, `1.2k`, `5.6 MB`.
enum TopFormat {
    static func rate(_ value: Double?) -> String {
        guard let value else { return "—" }
        if value >= 10_000 { return String(format: "%.1fk", value / 1000) }
        if value >= 100 || value == value.rounded() { return String(format: "%.0f", value) }
        return String(format: "%.1f", value)
    }

    static func ms(_ value: Double?) -> String {
        guard let value else { return "—" }
        return value >= 100 ? String(format: "%.0f ms", value) : String(format: "%.2f ms", value)
    }

    static func bytes(_ value: Double) -> String {
        let units = ["B", "kB", "MB", "GB", "TB"]
        var amount = value
        var unit = 0
        while amount >= 1000 && unit < units.count - 1 {
            amount /= 1000
            unit += 1
        }
        return unit == 0 ? String(format: "%.0f B", amount) : String(format: "%.1f %@", amount, units[unit])
    }

    static func uptime(_ seconds: Int) -> String {
        let s = max(0, seconds)
        if s >= 86_400 { return "\(s / 86_400)d\(s / 3600 % 24)h" }
        if s >= 3600 { return "\(s / 3600)h\(String(format: "%02d", s / 60 % 60))m" }
        return "\(s / 60)m\(String(format: "%02d", s % 60))s"
    }
}

/// The full-screen view: a list of lines (with styles).
enum TopRender {
    static func lines(board: TopBoard, sample: TopSample?, rates: TopRates?, channels: ChannelActivity,
                      width: Int, height: Int) -> [String] {
        let server = sample?.stats["server"]?.text ?? "?"
        let up = sample.map { " · up " + TopFormat.uptime($0.int("uptime_s")) } ?? ""
        let node = sample?.cluster.map { " · node " + DisplayWidth.sanitized($0.node) } ?? ""
        var out = [ANSI.inverse + ANSI.bold + " OutaTime top " + ANSI.reset
            + " \(board.server) · \(DisplayWidth.sanitized(server))\(node)\(up) · every \(TopFormat.rate(board.intervalS)) s · \(board.connection)"]
        out.append("")
        func row(_ label: String, _ cells: [(String, String)]) -> String {
            ANSI.bold + DisplayWidth.fit(label, 13) + ANSI.reset
                + cells.map { name, value in ANSI.cyan + DisplayWidth.fit(value, 9, right: true) + ANSI.reset + " " + DisplayWidth.fit(name, 15) }
                .joined()
        }
        if let sample {
            let r = rates
            out.append(row("CONNECTIONS", [("open", "\(sample.int("connections"))"), ("ready", "\(sample.int("sessions_ready"))"),
                                           ("accepted/s", TopFormat.rate(r?.perSecond("connections_accepted"))),
                                           ("closed/s", TopFormat.rate(r?.closesPerSecond))]))
            out.append(row("CHANNELS", [("channels", "\(sample.int("channels"))"), ("subscriptions", "\(sample.int("subscriptions"))"),
                                        ("published/s", TopFormat.rate(r?.perSecond("messages_published"))),
                                        ("slow closes", "\(sample.int("slow_consumer_closes"))")]))
            out.append(row("TRAFFIC", [("deliveries/s", TopFormat.rate(r?.perSecond("deliveries"))),
                                       ("commands/s", TopFormat.rate(r?.perSecond("commands"))),
                                       ("frames in/s", TopFormat.rate(r?.perSecond("frames_in"))),
                                       ("frames out/s", TopFormat.rate(r?.perSecond("frames_out")))]))
            out.append(row("", [("bytes in/s", r.map { TopFormat.bytes($0.perSecond("bytes_in")) } ?? "—"),
                                ("bytes out/s", r.map { TopFormat.bytes($0.perSecond("bytes_out")) } ?? "—")]))
            out.append(row("STORE", [("events/s", TopFormat.rate(r?.perSecond("events_committed"))),
                                     ("commits/s", TopFormat.rate(r?.perSecond("store_batches"))),
                                     ("commit", TopFormat.ms(r?.commitMs)),
                                     ("backlog", "\(sample.int("store_backlog"))")]))
            out.append(row("TICKS", [("ticks/s", TopFormat.rate(r?.perSecond("ticks"))),
                                     ("late/s", TopFormat.rate(r?.perSecond("ticks_late"))),
                                     ("tick late", TopFormat.ms(r?.tickLatenessMs)),
                                     ("max late", "\(sample.int("tick_lateness_max_ms")) ms")]))
            if let cluster = sample.cluster {
                // Cluster mode only: the store's NATS link; a line in red while it is down.
                let link = cluster.natsConnected.map { $0 ? "up" : "DOWN" } ?? "—"
                out.append(row("CLUSTER", [("nats", link), ("reconnects", cluster.natsReconnects.map { "\($0)" } ?? "—"),
                                           ("owned", "\(cluster.channelsOwned)")]))
                let url = cluster.natsURL.map { DisplayWidth.sanitized($0) } ?? "no NATS link reported"
                if cluster.natsConnected == false {
                    let down = cluster.downSeconds.map { " for \($0) s" } ?? ""
                    out.append(String(repeating: " ", count: 13) + ANSI.red + ANSI.bold + "NATS link to \(url) down\(down): "
                        + "commands fail until it is back" + ANSI.reset)
                } else {
                    let retries = cluster.ackRetries.map { " · ack retries \($0)" } ?? ""
                    out.append(String(repeating: " ", count: 13) + ANSI.dim + url + retries + ANSI.reset)
                }
            }
            out.append(row("PROCESS", [("memory", TopFormat.bytes(Double(sample.int("rss_bytes")))),
                                       ("conflated/s", TopFormat.rate(r?.perSecond("ticks_conflated"))),
                                       ("deferred/s", TopFormat.rate(r?.perSecond("reads_deferred")))]))
        } else {
            out.append("  waiting for the first reading…")
        }
        // Both tables under the readings: when they do not fit, each keeps
        // its title and gets a share of the rows, so neither disappears.
        let busiest = board.channelRows > 0 ? Array(channels.rows.prefix(board.channelRows)) : nil
        let slowest = sample?.slowestChannels ?? []
        let tableLines = max(0, height - 2 - out.count) - (busiest == nil ? 0 : 3) - 3
        let (busyRows, slowRows) = shareRows(tableLines, max(1, busiest?.count ?? 0), max(1, slowest.count))
        if let busiest {
            out.append("")
            let scope = channels.partial ? " (of the first 1000 channels by name)" : ""
            out.append(ANSI.bold + "BUSIEST CHANNELS" + ANSI.reset + ANSI.dim + scope + ANSI.reset)
            out.append(ANSI.dim + "  " + DisplayWidth.fit("CHANNEL", 40) + DisplayWidth.fit("EVENTS/S", 10, right: true)
                + DisplayWidth.fit("SEQ", 10, right: true) + DisplayWidth.fit("WATCHERS", 10, right: true) + ANSI.reset)
            if busiest.isEmpty { out.append("  no channels") }
            for entry in busiest.prefix(busyRows) {
                out.append("  " + DisplayWidth.fit(entry.channel, 40) + DisplayWidth.fit(TopFormat.rate(entry.eventsPerSecond), 10, right: true)
                    + DisplayWidth.fit("\(entry.seq)", 10, right: true) + DisplayWidth.fit("\(entry.watchers)", 10, right: true))
            }
        }
        out.append("")
        out.append(ANSI.bold + "SLOWEST CHANNELS" + ANSI.reset + ANSI.dim + " (worst tick lateness, last 10–20 s)" + ANSI.reset)
        out.append(ANSI.dim + "  " + DisplayWidth.fit("CHANNEL", 40) + DisplayWidth.fit("WORST LATE", 12, right: true)
            + DisplayWidth.fit("LATE TICKS", 12, right: true) + ANSI.reset)
        if sample == nil {
            out.append("  —")
        } else if sample?.slowestChannels == nil {
            out.append("  not reported by this server")
        } else if slowest.isEmpty {
            out.append("  no channel's ticks ran late")
        }
        for entry in slowest.prefix(slowRows) {
            out.append("  " + DisplayWidth.fit(entry.channel, 40) + DisplayWidth.fit("\(entry.tickLatenessMaxMs) ms", 12, right: true)
                + DisplayWidth.fit("\(entry.ticksLate)", 12, right: true))
        }
        var screen = Array(out.prefix(max(0, height - 2)).map { ANSI.clip($0, width) })
        while screen.count < height - 2 { screen.append("") }
        screen.append(ANSI.clip(board.status.isEmpty ? "" : ANSI.yellow + DisplayWidth.sanitized(board.status), width))
        screen.append(ANSI.clip(ANSI.dim + "? help · q quit", width))
        if board.showHelp {
            return Overlay.box(title: "outatime top", body: TopBoard.helpLines, over: screen, width: width)
        }
        return screen
    }

    /// Rows for two tables that need `first` and `second` rows and share
    /// `lines`: each its need when both fit; otherwise half each, a table
    /// needing less than half leaving the rest to the other. At least one
    /// row each (the screen's bottom clips the rest).
    static func shareRows(_ lines: Int, _ first: Int, _ second: Int) -> (Int, Int) {
        if first + second <= lines { return (first, second) }
        let half = max(1, lines / 2)
        if first <= half { return (first, max(1, lines - first)) }
        if second <= half { return (max(1, lines - second), second) }
        return (max(1, lines - half), half)
    }
}

/// Line mode (stdout not a terminal): a header, then one line per reading,
/// columns fixed, like `redis-cli --stat`.
enum TopLines {
    static let columns: [(String, Int)] = [
        ("conns", 6), ("subs", 6), ("deliv/s", 9), ("cmds/s", 8), ("events/s", 9), ("commit_ms", 10),
        ("ticks/s", 8), ("late_ms", 8), ("backlog", 8), ("in/s", 10), ("out/s", 10), ("rss", 10), ("slow_ms", 8),
    ]

    /// The fixed columns, then `slowest`: the channel whose ticks ran
    /// latest recently, left-aligned and last, since a name has no fixed
    /// width (one word: a channel name has no space).
    static var header: String {
        columns.map { DisplayWidth.fit($0.0, $0.1, right: true) }.joined(separator: " ") + " slowest"
    }

    static func line(_ rates: TopRates) -> String {
        let s = rates.current
        func fixed(_ value: Double?) -> String { value.map { String(format: "%.2f", $0) } ?? "-" }
        let values = [
            "\(s.int("connections"))", "\(s.int("subscriptions"))", TopFormat.rate(rates.perSecond("deliveries")),
            TopFormat.rate(rates.perSecond("commands")), TopFormat.rate(rates.perSecond("events_committed")),
            fixed(rates.commitMs), TopFormat.rate(rates.perSecond("ticks")), fixed(rates.tickLatenessMs),
            "\(s.int("store_backlog"))", TopFormat.bytes(rates.perSecond("bytes_in")).replacingOccurrences(of: " ", with: ""),
            TopFormat.bytes(rates.perSecond("bytes_out")).replacingOccurrences(of: " ", with: ""),
            TopFormat.bytes(Double(s.int("rss_bytes"))).replacingOccurrences(of: " ", with: ""),
            s.slowestChannels?.first.map { "\($0.tickLatenessMaxMs)" } ?? "-",
        ]
        let slowest = s.slowestChannels?.first.map { DisplayWidth.sanitized($0.channel) } ?? "-"
        return zip(columns, values).map { DisplayWidth.fit($1, $0.1, right: true) }.joined(separator: " ") + " " + slowest
    }

    /// The same figures as ``line(_:)`` as one JSON object (`--json`),
    /// unrounded and named after the server's `stats` fields: rates end in
    /// `_per_s`; `commit_ms` and `tick_lateness_ms` are null when nothing
    /// was committed or ticked; `slowest_channels` is the server's list.
    static func json(_ rates: TopRates) -> String {
        let s = rates.current
        func optional(_ value: Double?) -> JSONValue { value.map { .double($0) } ?? .null }
        var fields: [String: JSONValue] = [
            "seconds": .double(rates.seconds),
            "connections": .int(Int64(s.int("connections"))),
            "subscriptions": .int(Int64(s.int("subscriptions"))),
            "store_backlog": .int(Int64(s.int("store_backlog"))),
            "rss_bytes": .int(Int64(s.int("rss_bytes"))),
            "commit_ms": optional(rates.commitMs),
            "tick_lateness_ms": optional(rates.tickLatenessMs),
        ]
        for counter in ["deliveries", "commands", "events_committed", "ticks", "bytes_in", "bytes_out", "reads_deferred"] {
            fields[counter + "_per_s"] = .double(rates.perSecond(counter))
        }
        fields["slowest_channels"] = s.stats["slowest_channels"] ?? .null
        if let cluster = s.stats["cluster"] { fields["cluster"] = cluster }
        return Output.jsonLine(JSONValue.object(fields))
    }
}
