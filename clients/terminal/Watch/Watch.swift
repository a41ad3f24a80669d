import ArgumentParser
import Foundation
import OutaTimeClient
import OutaTimeProtocol
import UV
#if canImport(Glibc)
import Glibc
#endif

struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Watch channels live: a full-screen board, or one line per change when piped.",
        discussion: """
            On a terminal: Tab moves between panels; DeLorean t travel; laps s start/stop, \
            l lap, r reset; timers ↑/↓ select, Enter or space start/stop viewing; ? shows every key; \
            q or Ctrl-C quits. Only the lines that changed are redrawn. Set NO_COLOR (any value) \
            for no colours. When stdout is not a terminal, every event, tick, presence and \
            connection change is printed as one line; with --json (on a terminal too) as one \
            JSON object a line: each push as the server sends it, and objects of type sync, \
            connection and error. With --jsonl, one JSON object a line of what the board shows, \
            for scripts: connection changes with the reason, each panel turning stale or live \
            (with the age of its data), the values shown after every event and tick, each \
            event's seq; every object has type, mono_ms and wall (see --jsonl below). \
            A panel whose data stopped (no tick while a car accelerates, a countdown runs or a \
            stopwatch runs; a silent or lost connection) is dimmed and marked STALE with the age \
            of what it shows. A server that cannot be reached, or that refuses the \
            connection, ends it (exit 3, or 1 for a refusal such as a token it does not accept); \
            once connected, a lost connection is retried.

            Examples:
              outatime watch delorean/main timers/hill-valley
              outatime watch laps/morning-run --for 60 --json | jq -c 'select(.type == "event")'
            """)

    @Argument(help: "Channels to watch, e.g. delorean/main laps/run timers/hill-valley.")
    var channels: [String]

    @Option(name: .customLong("for"), help: ArgumentHelp("Quit after this many seconds.", valueName: "seconds"))
    var duration: Double?

    @Flag(help: """
        One JSON object a line of what the board shows, for scripts (tools/wan_trials.py); \
        each has type, mono_ms (monotonic) and wall: connection {state: connecting, connected, \
        reconnecting, recovered or closed; reason, reason_code, silence_ms, attempt, delay_ms; last_try and \
        last_try_code: why the latest attempt failed, from the second on, when that is news}, \
        sync {channel, method, events, seq}, event {channel, seq, event, replayed}, link and \
        freshness {channel, live, age_ms, why: disconnected, silent_link or ticks_late}, \
        shown {channel, seq, live, values}, error {message}.
        """)
    var jsonl = false

    @OptionGroup var options: ConnectionOptions

    func run() throws {
        guard !channels.isEmpty else { throw ValidationError("name at least one channel") }
        Signal.ignore(SIGPIPE)
        Signal.unblock([SIGINT, SIGTERM, SIGWINCH])
        let loop = try Loop()
        var clientOptions = options.clientOptions
        clientOptions.reconnect = true
        let session = WatchSession(loop: loop, options: clientOptions, channels: channels,
                                   interactive: !options.json && !jsonl && TTY.isTerminal(1) && TTY.isTerminal(0),
                                   json: options.json, jsonl: jsonl)
        try session.start(duration: duration)
        _ = loop.run()
        session.restoreTerminal()
        try? loop.close()
        if let failure = session.failure {
            Output.fail(failure.message)
            throw ExitCode(failure.code)
        }
    }
}

/// One `watch` run on the main thread's loop.
final class WatchSession {
    let loop: Loop
    let options: ClientOptions
    let connection: OutaTimeConnection
    let interactive: Bool
    /// Lines as JSON objects (`--json`) instead of text.
    let json: Bool
    /// What the board shows as JSON lines (`--jsonl`, WatchJSONL.swift).
    let jsonl: Bool
    /// What each panel was promised and when its data came.
    var liveness = WatchLiveness()
    /// The server clock's offset from ours, to date ticks (WatchSession+ServerClock.swift).
    var serverClock = ServerClock()
    var clockPingsSent = 0
    var nextClockPingAtMs: UInt64 = 0
    /// Re-judges staleness while nothing arrives (the connection itself
    /// probes a silent link: ``OutaTimeConnection/probeSentAtMs``).
    private var pulse: UV.Timer?
    /// Why the connection last dropped after being ready, and the silence
    /// before it; kept across the failed attempts that follow.
    var lastDrop: (reason: DisconnectReason, silenceMs: UInt64?)?
    /// When the connection came back after a drop, and what the
    /// resubscriptions brought: events replayed, channels reloaded in full.
    var recovery: (at: Date, replayed: Int, reloaded: Int)?
    var wasReady = false
    var board: WatchBoard
    /// Why the run ended badly: the message and exit status.
    private(set) var failure: (message: String, code: Int32)?
    private var handles: [Handle] = []
    private var screen: FullScreen?
    private var redraw: UV.Timer?
    private var redrawPending = false
    private var lastDraw: UInt64 = 0
    private var painter = ScreenPainter(colour: ScreenPainter.colourWanted(environment: ProcessInfo.processInfo.environment))
    var everConnected = false
    /// Timers this watcher views (`channel#id`): viewing is per connection, so
    /// after a reconnect they are started again.
    private var viewing: Set<String> = []
    var finished = false

    init(loop: Loop, options: ClientOptions, channels: [String], interactive: Bool, json: Bool = false, jsonl: Bool = false) {
        self.loop = loop
        self.options = options
        self.interactive = interactive
        self.json = json
        self.jsonl = jsonl
        connection = OutaTimeConnection(loop: loop, options: options)
        board = WatchBoard(server: "\(options.host):\(options.port)", channels: channels)
    }

    func start(duration: Double?) throws {
        for signum in [SIGINT, SIGTERM] {
            let signal = Signal(loop: loop)
            try signal.start(signum) { [unowned self] _ in quit() }
            handles.append(signal)
        }
        if let duration {
            let timer = UV.Timer(loop: loop)
            timer.start(timeoutMs: UInt64(max(0, duration) * 1000)) { [unowned self] in quit() }
            handles.append(timer)
        }
        if interactive { try startTerminal() }
        let pulse = UV.Timer(loop: loop)
        pulse.start(timeoutMs: Self.pulseMs, repeatMs: Self.pulseMs) { [unowned self] in
            loop.updateTime()
            clockPingIfDue()
            evaluate()
        }
        self.pulse = pulse
        handles.append(pulse)
        wire()
        connection.connect()
        for channel in board.channels {
            connection.subscribe(channel, messages: false) { [unowned self] result in
                if case .failure(let error) = result { say("\(channel): \(error)") }
                changed()
            }
        }
        changed()
    }

    // MARK: connection callbacks

    private func wire() {
        connection.onStateChange = { [unowned self] state in
            loop.updateTime()
            let silence = connection.lastFrameAtMs.map { loop.now &- min($0, loop.now) }
            switch state {
            case .ready:
                board.selfSession = connection.hello?.session
                restartClockPings()
                clockPingIfDue()
                if everConnected {
                    recovery = (Date(), 0, 0)
                    reviewTimers()
                }
                everConnected = true
                wasReady = true
            case .reconnecting, .closed:
                // The first failure after a ready connection is why it
                // dropped; later failed attempts do not replace it.
                if wasReady, let reason = connection.lastDisconnect { lastDrop = (reason, silence) }
                wasReady = false
                recovery = nil
            case .connecting, .idle: break
            }
            board.connection = connectionLine(state)
            let lastTry = WatchBoard.lastTry(state, drop: lastDrop?.reason, latest: connection.lastDisconnect)
            if jsonl {
                emit("connection", WatchJSONL.connection(state, recovered: state == .ready && recovery != nil,
                                                         drop: state == .connecting && !everConnected ? nil : lastDrop,
                                                         lastTry: lastTry))
            } else {
                line(json ? WatchJSON.connection(state, host: options.host, port: options.port, drop: lastDrop, lastTry: lastTry)
                     : WatchLines.connection(state, host: options.host, port: options.port, drop: lastDrop, lastTry: lastTry))
            }
            evaluate()
            ended(state)
            changed()
        }
        connection.onEvent = { [unowned self] event in
            line(json ? WatchJSON.event(event) : WatchLines.event(event))
            if jsonl { emit("event", WatchJSONL.event(event)) }
            stateChanged(event.channel)
        }
        connection.onTick = { [unowned self] tick in
            line(json ? WatchJSON.tick(tick) : WatchLines.tick(tick))
            loop.updateTime()
            liveness.ticked(tick.channel, nowMs: loop.now, ageOnArrivalMs: ageOnArrival(tick))
            evaluate()
            emitShown(tick.channel)
            changed()
        }
        connection.onPresence = { [unowned self] change in
            line(json ? WatchJSON.presence(change) : WatchLines.presence(change))
            changed()
        }
        connection.onSync = { [unowned self] sync in
            line(json ? WatchJSON.sync(sync) : WatchLines.sync(sync))
            if jsonl { emit("sync", WatchJSONL.sync(sync)) }
            if var recovery {
                switch sync.method {
                case .recovered(let events): recovery.replayed += events
                case .reloaded: recovery.reloaded += 1
                case .snapshot: break
                }
                self.recovery = recovery
                board.connection = connectionLine(connection.state)
            }
            stateChanged(sync.channel, synced: true)
        }
        connection.onSubscriptionFailed = { [unowned self] channel, error in say("\(channel): \(error)") }
        connection.onServerError = { [unowned self] error in say("server: \(error.code): \(error.message)") }
    }

    /// A line for the non-terminal mode, flushed at once.
    func line(_ text: String) {
        guard !interactive, !jsonl else { return }
        writeAll(DisplayWidth.sanitized(text) + "\n")  // one line: a server's control characters become �
    }

    /// A message in the status line (or a line when piped).
    private func say(_ text: String) {
        guard !finished else { return }  // requests cut short by the end, not news
        board.status = text
        if jsonl {
            emit("error", ["message": .string(text)])
        } else if !interactive {
            writeAll(json ? WatchJSON.error(text) + "\n" : "error \(DisplayWidth.sanitized(text))\n")
        }
        changed()
    }

    // MARK: terminal

    private func startTerminal() throws {
        let screen = try FullScreen(loop: loop, clear: true,
                                    onKeys: { [unowned self] bytes in keys(bytes) },
                                    onEnd: { [unowned self] in quit() },
                                    onResize: { [unowned self] in
                                        painter.invalidate()
                                        changed()
                                    })
        self.screen = screen
        handles += screen.handles
        let redraw = UV.Timer(loop: loop)
        self.redraw = redraw
        handles.append(redraw)
    }

    /// Leaves the alternate screen and gives the terminal back as it was.
    func restoreTerminal() {
        screen?.restore(colour: painter.colour)
    }

    /// Something changed: redraw soon, at most ~20 times a second.
    func changed() {
        guard interactive, !finished, let redraw, !redrawPending else { return }
        redrawPending = true
        loop.updateTime()
        let since = loop.now &- lastDraw
        redraw.start(timeoutMs: since >= 50 ? 0 : 50 - since) { [unowned self] in draw() }
    }

    private func draw() {
        redrawPending = false
        lastDraw = loop.now
        guard screen?.isActive == true else { return }
        let lines = WatchRender.lines(board: board, mirrors: connection.allMirrors,
                                      width: max(20, screen?.size.columns ?? 80), height: max(6, screen?.size.rows ?? 24))
        writeAll(painter.frame(lines))
    }

    // MARK: keys

    private func keys(_ bytes: [UInt8]) {
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            if byte == 0x1B, index + 1 < bytes.count + 1, index < bytes.count, bytes[index] == UInt8(ascii: "[") || bytes[index] == UInt8(ascii: "O") {
                let code = index + 1 < bytes.count ? bytes[index + 1] : 0
                index += 2
                if code == UInt8(ascii: "A") { moveSelection(-1) }
                if code == UInt8(ascii: "B") { moveSelection(1) }
                continue
            }
            if board.showHelp {
                // Any key closes the help; q still quits.
                board.showHelp = false
                if byte == 0x03 || byte == UInt8(ascii: "q") || byte == UInt8(ascii: "Q") { quit(); return }
                changed()
                continue
            }
            switch byte {
            case 0x03, UInt8(ascii: "q"), UInt8(ascii: "Q"): quit(); return
            case UInt8(ascii: "?"): board.showHelp = true
            case 0x09: board.focus = (board.focus + 1) % max(1, board.channels.count)
            case UInt8(ascii: "k"): moveSelection(-1)
            case UInt8(ascii: "j"): moveSelection(1)
            default: act(Character(UnicodeScalar(byte)))
            }
            changed()
        }
    }

    private func moveSelection(_ delta: Int) {
        guard let channel = board.focusedChannel, WatchBoard.kind(channel) == "timers" else { return }
        let count = connection.mirror(channel)?.snapshot()?["timers"]?.array.count ?? 0
        guard count > 0 else { return }
        board.timerSelection[channel] = ((board.timerSelection[channel] ?? 0) + delta + count) % count
        changed()
    }

    /// A key on the focused panel.
    private func act(_ key: Character) {
        guard let channel = board.focusedChannel else { return }
        let state = connection.mirror(channel)?.snapshot()
        switch (WatchBoard.kind(channel), key) {
        case ("delorean", "t"): command(channel, "travel")
        case ("laps", "s"): command(channel, state?["status"]?.text == "running" ? "stop" : "start")
        case ("laps", "l"): command(channel, "lap")
        case ("laps", "r"): command(channel, "reset")
        case ("timers", "\r"), ("timers", "\n"), ("timers", " "):
            let timers = state?["timers"]?.array ?? []
            guard !timers.isEmpty else { return say("no timer to start") }
            let timer = timers[(board.timerSelection[channel] ?? 0) % timers.count]
            let key = "\(channel)#\(timer["id"]?.text ?? "")"
            let action = viewing.contains(key) ? "stop" : "start"
            command(channel, action, ["id": timer["id"] ?? .null]) { [unowned self] ok in
                if ok && action == "start" { viewing.insert(key) } else { viewing.remove(key) }
            }
        default: break
        }
    }

    private func command(_ channel: String, _ action: String, _ args: [String: JSONValue] = [:],
                         then: ((Bool) -> Void)? = nil) {
        board.status = "\(channel): \(action)…"
        connection.command(channel, action: action, args: args) { [unowned self] result in
            switch result {
            case .success: board.status = "\(channel): \(action) ok"
            case .failure(.server(let error)): board.status = "\(channel): \(action): \(error.code): \(error.message)"
            case .failure(let error): board.status = "\(channel): \(action): \(error)"
            }
            if case .success = result { then?(true) } else { then?(false) }
            changed()
        }
    }

    /// After a reconnect: view again the timers this watcher was viewing
    /// (the old connection's views ended with it).
    private func reviewTimers() {
        for key in viewing.sorted() {
            guard let hash = key.lastIndex(of: "#"), let id = Int64(key[key.index(after: hash)...]) else { continue }
            let channel = String(key[..<hash])
            command(channel, "start", ["id": .int(id)]) { [unowned self] ok in
                if !ok { viewing.remove(key) }
            }
        }
    }

    // MARK: ending

    /// Ends the run when the connection cannot be made (it never was) or
    /// ended for good: a refused hello or certificate, a `bye` for a
    /// refusal. Once connected, anything else is retried.
    private func ended(_ state: ConnectionState) {
        guard !finished else { return }
        switch state {
        case .reconnecting where !everConnected:
            fail(ExitStatus.message(connection.lastDisconnect, host: options.host, port: options.port),
                 code: ExitStatus.unreachable)
        case .closed(let reason):
            fail(ExitStatus.closed(reason, everConnected: everConnected, host: options.host, port: options.port),
                 code: ExitStatus.after(reason))
        default: break
        }
    }

    private func fail(_ message: String, code: Int32) {
        guard failure == nil else { return }
        failure = (message, code)
        quit()
    }

    func quit() {
        guard !finished else { return }
        finished = true
        restoreTerminal()
        connection.close()
        for handle in handles { handle.close() }
        handles = []
    }

    /// Writes all of `text` to stdout.
    func writeAll(_ text: String) { StandardOutput.writeAll(text) }
}
