import Foundation
import OutaTimeClient
import OutaTimeDomain
import OutaTimeProtocol

/// What the full-screen view shows besides the mirrors: connection, focus,
/// selections, the status line.
struct WatchBoard {
    var server: String
    var channels: [String]
    var connection = "connecting…"
    var selfSession: String?
    var focus = 0
    var timerSelection: [String: Int] = [:]
    var status = ""
    /// Each panel's verdict (``Staleness``), by channel; a channel missing
    /// here counts as live only before the first evaluation.
    var freshness: [String: Freshness] = [:]
    /// The connection's own verdict.
    var link: Freshness = .live
    /// The `?` overlay is shown.
    var showHelp = false

    var focusedChannel: String? { channels.isEmpty ? nil : channels[focus % channels.count] }

    static func kind(_ channel: String) -> String { String(channel.split(separator: "/").first ?? "") }

    /// The connection part of the title line: what it is doing, why it
    /// reconnects (`lastDrop`: why the ready connection dropped, and the
    /// silence before), when it recovered and what the resubscriptions
    /// brought (`recovery`: the local time, events replayed, channels
    /// reloaded in full). `lastDisconnect` is the latest failed attempt's reason.
    static func connectionLine(_ state: ConnectionState, everConnected: Bool,
                               lastDrop: (reason: DisconnectReason, silenceMs: UInt64?)?,
                               recovery: (clock: String, replayed: Int, reloaded: Int)?,
                               lastDisconnect: DisconnectReason?) -> String {
        let why = lastDrop.map { $0.reason.explanation(silenceMs: $0.silenceMs) }
        switch state {
        case .ready:
            guard let recovery else { return "connected" }
            var brought: [String] = []
            if recovery.reloaded > 0 {
                brought.append("state reloaded" + (recovery.reloaded > 1 ? " (\(recovery.reloaded) channels)" : ""))
            }
            if recovery.replayed > 0 || recovery.reloaded == 0 {
                brought.append("\(recovery.replayed) event\(recovery.replayed == 1 ? "" : "s") replayed")
            }
            return "recovered \(recovery.clock)" + (why.map { " after " + $0 } ?? "") + "; " + brought.joined(separator: ", ")
        case .reconnecting(let attempt, let delay):
            var text = "reconnecting, attempt \(attempt) in \(DisconnectReason.seconds(delay))"
            if let why { text += ": " + why }
            if let last = lastTry(state, drop: lastDrop?.reason, latest: lastDisconnect) {
                text += "; last try: " + last.explanation()
            }
            return text
        case .connecting: return everConnected ? "reconnecting…" + (why.map { ": " + $0 } ?? "") : "connecting…"
        case .closed(let reason): return "closed" + (reason.map { ": " + $0.explanation(silenceMs: lastDrop?.silenceMs) } ?? "")
        case .idle: return "connecting…"
        }
    }

    /// Why the latest reconnect attempt failed, when that is news: from the
    /// second attempt on, and other than why the link first dropped. A
    /// server that came back full answers each attempt `bye server_busy`
    /// while the drop itself was `bye server_shutdown`; without this the
    /// board, the lines and `--jsonl` kept saying only the first.
    static func lastTry(_ state: ConnectionState, drop: DisconnectReason?, latest: DisconnectReason?) -> DisconnectReason? {
        guard case .reconnecting(let attempt, _) = state, attempt > 1, let latest, latest != drop else { return nil }
        return latest
    }

    /// The keys the focused panel takes.
    var help: String {
        let common = "Tab next panel · ? help · q quit"
        switch focusedChannel.map(Self.kind) {
        case "delorean": return "t travel · " + common
        case "laps": return "s start/stop · l lap · r reset · " + common
        case "timers": return "↑/↓ select · Enter/space start/stop viewing · " + common
        default: return common
        }
    }

    /// The `?` overlay: every key, by panel kind.
    static let helpLines = [
        "Tab          focus the next panel (marked ▸)",
        "delorean     t  travel to the destination time",
        "laps         s  start/stop · l  lap · r  reset",
        "timers       ↑/↓ or k/j  select · Enter/space  start/stop viewing",
        "?            show or hide this help (any key hides it)",
        "STALE 3.2 s  a panel's data stopped: values dimmed, 3.2 s old",
        "q, Ctrl-C    quit",
        "",
        "Colours: off when NO_COLOR is set (no-color.org).",
    ]
}

/// Formatting of times and durations.
enum WatchFormat {
    /// `OCT 26 1985 01:21 AM`, or a blank readout.
    static func circuit(_ iso: JSONValue?) -> String {
        guard case .string(let text)? = iso else { return "--- -- ---- --:-- --" }
        return DeLoreanState.display(text)
    }

    /// Seconds as `HH:MM:SS`.
    static func hms(_ seconds: Int) -> String {
        let s = max(0, seconds)
        return String(format: "%02d:%02d:%02d", s / 3600, (s / 60) % 60, s % 60)
    }

    /// Milliseconds as `mm:ss.t`.
    static func lap(_ ms: Int) -> String {
        let m = max(0, ms)
        return String(format: "%02d:%02d.%d", m / 60_000, (m / 1000) % 60, (m / 100) % 10)
    }

    static func int(_ value: JSONValue?) -> Int { Int(value?.number ?? 0) }

    /// A table cell: server text made safe, fitted to `width` columns.
    static func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
        DisplayWidth.fit(DisplayWidth.sanitized(text), width, right: right)
    }

    /// `2026-11-22T08:00:00Z` → `11-22 08:00`.
    static func short(_ iso: JSONValue?) -> String {
        guard case .string(let text)? = iso, text.count >= 16 else { return "—" }
        let chars = Array(text)
        return String(chars[5..<10]) + " " + String(chars[11..<16])
    }
}

/// Draws the board: a list of screen lines (with colours).
enum WatchRender {
    static func lines(board: WatchBoard, mirrors: [String: ChannelMirror], width: Int, height: Int,
                      now: Date = Date()) -> [String] {
        var out: [String] = []
        let others = Set(mirrors.values.flatMap(\.watchers).filter { $0.session != board.selfSession }.map(\.name))
        let watching = others.isEmpty ? "no one else watching"
            : "also watching: " + others.sorted().map(DisplayWidth.sanitized).joined(separator: ", ")
        out.append(ANSI.inverse + ANSI.bold + " OutaTime " + ANSI.reset + " \(board.server) · \(watching)")
        // The connection on a line of its own: why it reconnects and when it
        // recovered must not be cut off by the width (continued on the next
        // lines, broken after a "; ", when it is too wide).
        out.append(contentsOf: connectionLines(board, width: width))
        out.append("")
        for (index, channel) in board.channels.enumerated() {
            let focused = index == board.focus % max(1, board.channels.count)
            let mirror = mirrors[channel]
            let title = (focused ? ANSI.inverse + "▸" : ANSI.bold + " ") + " \(channel) " + ANSI.reset
                + ANSI.dim + "  seq \(mirror?.seq ?? 0) · \(mirror?.watcherCount ?? 0) watching" + ANSI.reset
            let freshness = board.freshness[channel] ?? .live
            out.append(title + staleMark(freshness))
            guard let mirror, let state = mirror.snapshot(at: now) else {
                out.append("  waiting for the channel…")
                out.append("")
                continue
            }
            var panel: [String]
            switch WatchBoard.kind(channel) {
            case "delorean": panel = delorean(state, tick: mirror.lastTick)
            case "starport": panel = starport(state)
            case "timers": panel = timers(state, tick: mirror.lastTick, selected: board.timerSelection[channel] ?? 0,
                                          focused: focused)
            case "laps": panel = laps(state, height: max(3, height - 20))
            default: panel = ["  " + DisplayWidth.sanitized(Output.inline(state))]
            }
            // Stale values are never shown as live: dimmed, without their colours.
            if !freshness.isLive { panel = panel.map { ANSI.dim + ANSI.unstyled($0) + ANSI.reset } }
            out += panel
            out.append("")
        }
        // Status and help at the bottom.
        let body = out.prefix(max(0, height - 2)).map { ANSI.clip($0, width) }
        var screen = Array(body)
        while screen.count < height - 2 { screen.append("") }
        screen.append(ANSI.clip(board.status.isEmpty ? "" : ANSI.yellow + DisplayWidth.sanitized(board.status), width))
        screen.append(ANSI.clip(ANSI.dim + board.help, width))
        if board.showHelp {
            return Overlay.box(title: "outatime watch: keys", body: WatchBoard.helpLines, over: screen, width: width)
        }
        return screen
    }

    /// The connection line, broken after a "; " or ": " into lines that
    /// fit `width` when it is too wide: on an 80-column terminal "…; last
    /// try: the server is full (bye server_busy)" was clipped in its bye
    /// code. A reason stays whole on its line (clipped only if it alone is
    /// wider than the terminal).
    static func connectionLines(_ board: WatchBoard, width: Int) -> [String] {
        let first = " " + connectionText(board)
        guard ANSI.width(first) > width else { return [first] }
        // Pieces that end with their separator ("…: ", "…; ").
        var pieces: [String] = []
        let rest = Substring(board.connection)
        var piece = ""
        var index = rest.startIndex
        while index < rest.endIndex {
            let character = rest[index]
            piece.append(character)
            let next = rest.index(after: index)
            if (character == ";" || character == ":"), next < rest.endIndex, rest[next] == " " {
                pieces.append(piece + " ")
                piece = ""
                index = rest.index(after: next)
                continue
            }
            index = next
        }
        if !piece.isEmpty { pieces.append(piece) }
        var lines: [String] = []
        var current = ""
        for piece in pieces {
            // Every line is indented 3 columns (the first by its marker).
            if current.isEmpty || ANSI.width(current + piece.trimmingCharacters(in: .whitespaces)) <= width - 3 {
                current += piece
            } else {
                lines.append(current.trimmingCharacters(in: .whitespaces))
                current = piece
            }
        }
        lines.append(current.trimmingCharacters(in: .whitespaces))
        var board = board
        board.connection = lines[0]
        return [" " + connectionText(board)] + lines.dropFirst().map { "   " + $0 }
    }

    /// The connection line: the state (with why it reconnects, when it
    /// recovered) after a green ● while live, a red ○ while down, and a
    /// silent link said as such even while the connection still counts as up.
    static func connectionText(_ board: WatchBoard) -> String {
        switch board.link {
        case .live: return ANSI.lime + "●" + ANSI.reset + " " + board.connection
        case .stale(let age, .silentLink):
            return ANSI.yellow + "○" + ANSI.reset + " " + ANSI.inverse + ANSI.yellow + " link silent \(DisconnectReason.seconds(age)) "
                + ANSI.reset + " " + board.connection
        case .stale:
            return ANSI.red + "○ " + ANSI.bold + board.connection + ANSI.reset
        }
    }

    /// After a panel's title: nothing while live, else ` STALE 3.2 s ` in
    /// reverse video and why.
    static func staleMark(_ freshness: Freshness) -> String {
        guard case .stale(let age, let why) = freshness else { return "" }
        let cause = switch why {
        case .disconnected: "not connected"
        case .silentLink: "link silent"
        case .ticksLate: "updates stopped"
        }
        return "  " + ANSI.inverse + ANSI.yellow + ANSI.bold + " STALE \(DisconnectReason.seconds(age)) " + ANSI.reset
            + ANSI.yellow + " " + cause + ANSI.reset
    }

    /// The speed to show: the latest tick's while accelerating (the mirror
    /// drops a tick that an event made old), else the state's.
    static func deloreanSpeed(_ state: JSONValue, tick: JSONValue?) -> Int {
        let accelerating = state["status"]?.text == "accelerating"
        return accelerating ? WatchFormat.int(tick?["speed_mph"] ?? state["speed_mph"]) : WatchFormat.int(state["speed_mph"])
    }

    static func delorean(_ state: JSONValue, tick: JSONValue?) -> [String] {
        let speed = deloreanSpeed(state, tick: tick)
        return [
            "  DESTINATION TIME   " + ANSI.redOrange + ANSI.bold + WatchFormat.circuit(state["destination_time"]) + ANSI.reset,
            "  PRESENT TIME       " + ANSI.lime + ANSI.bold + WatchFormat.circuit(state["present_time"]) + ANSI.reset,
            "  LAST TIME DEPARTED " + ANSI.orange + ANSI.bold + WatchFormat.circuit(state["last_departed"]) + ANSI.reset,
            "  SPEED              " + ANSI.red + ANSI.bold + DeLoreanState.displaySpeed(speed) + ANSI.reset
                + ANSI.dim + "  \(state["status"]?.text ?? "")" + ANSI.reset,
        ]
    }

    static func starport(_ state: JSONValue) -> [String] {
        let rows = state["dispatches"]?.array ?? []
        if rows.isEmpty { return ["  no dispatches"] }
        func p(_ text: String, _ width: Int, right: Bool = false) -> String { WatchFormat.pad(text, width, right: right) }
        let header: [String] = [p("ID", 4), p("MODEL", 10), p("PATH", 10), p("DIST km", 10, right: true),
                                p("DUR h", 8, right: true), "  ", p("DEPARTS", 12), p("ARRIVES", 12), "STATUS"]
        var out = [ANSI.bold + "  " + header.joined() + ANSI.reset]
        for row in rows {
            let hours = String(format: "%.2f", (row["duration_s"]?.number ?? 0) / 3600)
            let cells: [String] = [p(row["id"]?.text ?? "", 4), p(row["model"]?.text ?? "", 10), p(row["path"]?.text ?? "", 10),
                                   p(row["distance_km"]?.text ?? "", 10, right: true), p(hours, 8, right: true), "  ",
                                   p(WatchFormat.short(row["departs_at"]), 12), p(WatchFormat.short(row["arrives_at"]), 12),
                                   row["status"]?.text ?? ""]
            out.append("  " + cells.joined())
        }
        return out
    }

    static func timers(_ state: JSONValue, tick: JSONValue?, selected: Int, focused: Bool) -> [String] {
        let rows = state["timers"]?.array ?? []
        if rows.isEmpty { return ["  no timers"] }
        var ticked: [Int: Int] = [:]
        for entry in tick?["timers"]?.array ?? [] {
            ticked[WatchFormat.int(entry["id"])] = WatchFormat.int(entry["remaining_s"])
        }
        func p(_ text: String, _ width: Int, right: Bool = false) -> String { WatchFormat.pad(text, width, right: right) }
        let header: [String] = [p("ID", 4), p("EVENT", 24), p("LOCATION", 16), p("REMAINING", 11), p("STATUS", 10), "VIEWERS"]
        var out = [ANSI.bold + "    " + header.joined() + ANSI.reset]
        for (index, row) in rows.enumerated() {
            let id = WatchFormat.int(row["id"])
            let running = row["status"]?.text == "running"
            let remaining = running ? (ticked[id] ?? WatchFormat.int(row["remaining_s"])) : WatchFormat.int(row["remaining_s"])
            let marker = focused && index == selected % rows.count ? ANSI.inverse + " ▶" + ANSI.reset + "  " : "    "
            let cells: [String] = [marker, p("\(id)", 4), p(row["event"]?.text ?? "", 24), p(row["location"]?.text ?? "", 16),
                                   running ? ANSI.lime : "", p(WatchFormat.hms(remaining), 11), ANSI.reset,
                                   p(row["status"]?.text ?? "", 10), row["viewers"]?.text ?? "0"]
            out.append(cells.joined())
        }
        return out
    }

    static func laps(_ state: JSONValue, height: Int) -> [String] {
        let laps = state["laps"]?.array ?? []
        let lapTime = WatchFormat.lap(WatchFormat.int(state["lap_elapsed_ms"]))
        let total = WatchFormat.lap(WatchFormat.int(state["total_elapsed_ms"]))
        let head: [String] = ["  ", ANSI.bold, "LAP \(WatchFormat.int(state["lap_number"]))", ANSI.reset,
                              "   lap ", ANSI.lime, lapTime, ANSI.reset, "   total ", ANSI.orange, total, ANSI.reset,
                              "   ", state["status"]?.text ?? ""]
        var out = [head.joined()]
        let average = state["average_lap_ms"]?.number.map { WatchFormat.lap(Int($0)) } ?? "—"
        out.append("  laps: \(laps.count)   average \(average)")
        for entry in laps.suffix(height) {
            out.append("    lap \(WatchFormat.int(entry["lap"]))  \(WatchFormat.lap(WatchFormat.int(entry["time_ms"])))")
        }
        return out
    }
}

/// One line per change, for a stdout that is not a terminal.
enum WatchLines {
    static func event(_ event: ChannelEvent) -> String {
        "\(event.channel) #\(event.seq) \(event.event)\(event.replayed ? " (recovered)" : "") \(Output.inline(event.data))"
    }

    static func tick(_ tick: TickPush<JSONValue>) -> String { "\(tick.channel) tick \(Output.inline(tick.data))" }

    static func presence(_ change: PresencePush) -> String {
        var parts = ["\(change.channel) presence"]
        if !change.joined.isEmpty { parts.append("joined=" + change.joined.map(\.name).joined(separator: ",")) }
        if !change.left.isEmpty { parts.append("left=" + change.left.map(\.name).joined(separator: ",")) }
        return parts.joined(separator: " ")
    }

    static func sync(_ sync: ChannelSync) -> String {
        switch sync.method {
        case .snapshot: "\(sync.channel) snapshot seq \(sync.seq)"
        case .reloaded: "\(sync.channel) reloaded seq \(sync.seq)"
        case .recovered(let events): "\(sync.channel) recovered \(events) event(s) seq \(sync.seq)"
        }
    }

    /// `drop`: why the connection last dropped after being ready, said
    /// with `reconnecting`.
    static func connection(_ state: ConnectionState, host: String, port: Int,
                           drop: (reason: DisconnectReason, silenceMs: UInt64?)? = nil,
                           lastTry: DisconnectReason? = nil) -> String {
        switch state {
        case .idle: "connection idle"
        case .connecting: "connection connecting \(host):\(port)"
        case .ready: "connection connected \(host):\(port)"
        case .reconnecting(let attempt, let delay):
            "connection reconnecting attempt \(attempt) in \(delay) ms"
                + (drop.map { " (\($0.reason.explanation(silenceMs: $0.silenceMs)))" } ?? "")
                + (lastTry.map { "; last try: \($0.explanation())" } ?? "")
        case .closed(let reason?): "connection closed \(reason)"
        case .closed(nil): "connection closed"
        }
    }

    /// `link stale 1.6 s silent_link`, `link live`.
    static func link(_ freshness: Freshness) -> String { "link " + verdict(freshness) }

    /// `delorean/main stale 1.2 s ticks_late`, `delorean/main live`.
    static func freshness(_ channel: String, _ freshness: Freshness) -> String { channel + " " + verdict(freshness) }

    private static func verdict(_ freshness: Freshness) -> String {
        guard case .stale(let age, let why) = freshness else { return "live" }
        return "stale \(DisconnectReason.seconds(age)) \(why.rawValue)"
    }
}

/// `watch --json`: one JSON object a line. Pushes as the server sends them
/// (an event that came in a recovery also has `"replayed": true`); the
/// watcher's own news as objects of the same shape: `sync` (how a
/// subscription got its state), `connection` and `error`.
enum WatchJSON {
    static func event(_ event: ChannelEvent) -> String {
        guard event.replayed else { return Output.jsonLine(event.push) }
        var fields = object(event.push)
        fields["replayed"] = .bool(true)
        return Output.jsonLine(JSONValue.object(fields))
    }

    static func tick(_ tick: TickPush<JSONValue>) -> String { Output.jsonLine(tick) }

    static func presence(_ change: PresencePush) -> String { Output.jsonLine(change) }

    static func sync(_ sync: ChannelSync) -> String {
        var fields: [String: JSONValue] = ["type": .string("sync"), "channel": .string(sync.channel), "seq": .int(sync.seq)]
        switch sync.method {
        case .snapshot: fields["method"] = .string("snapshot")
        case .reloaded: fields["method"] = .string("reloaded")
        case .recovered(let events):
            fields["method"] = .string("recovered")
            fields["events"] = .int(Int64(events))
        }
        return Output.jsonLine(JSONValue.object(fields))
    }

    static func connection(_ state: ConnectionState, host: String, port: Int,
                           drop: (reason: DisconnectReason, silenceMs: UInt64?)? = nil,
                           lastTry: DisconnectReason? = nil) -> String {
        var fields: [String: JSONValue] = ["type": .string("connection"), "server": .string("\(host):\(port)")]
        switch state {
        case .idle: fields["state"] = .string("idle")
        case .connecting: fields["state"] = .string("connecting")
        case .ready: fields["state"] = .string("connected")
        case .reconnecting(let attempt, let delay):
            fields["state"] = .string("reconnecting")
            fields["attempt"] = .int(Int64(attempt))
            fields["delay_ms"] = .int(Int64(delay))
            if let drop {
                fields["reason"] = .string(drop.reason.explanation(silenceMs: drop.silenceMs))
                fields["reason_code"] = .string(drop.reason.code)
            }
            if let lastTry {
                fields["last_try"] = .string(lastTry.explanation())
                fields["last_try_code"] = .string(lastTry.code)
            }
        case .closed(let reason):
            fields["state"] = .string("closed")
            if let reason { fields["reason"] = .string(reason.description) }
        }
        return Output.jsonLine(JSONValue.object(fields))
    }

    static func error(_ text: String) -> String {
        Output.jsonLine(JSONValue.object(["type": .string("error"), "message": .string(text)]))
    }

    /// The members of an encodable push.
    private static func object(_ push: some Encodable) -> [String: JSONValue] {
        guard let data = try? JSONEncoder().encode(push), case .object(let fields)? = try? JSONValue.parse(data) else { return [:] }
        return fields
    }
}
