import ArgumentParser
import Foundation
import OutaTimeClient
import OutaTimeProtocol
import UV
#if canImport(Glibc)
import Glibc
#endif

struct Top: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A live view of a server's counters and rates; one line per interval when piped.",
        discussion: """
            Reads the server's stats every --interval and shows its connections, deliveries/s, \
            commands/s, events committed/s, the mean commit time, tick lateness, the storage \
            backlog, the busiest channels (events/s, from list: the first 1000 channels by \
            name, read less often above 1000 channels) and the slowest channels: the server's \
            five channels whose ticks ran latest over the last 10–20 s, with their worst \
            lateness and their ticks built more than 50 ms late (a scoped token sees only its \
            channels). Rates are the growth of a counter between \
            two readings. On a terminal: ? shows what each figure means, q or Ctrl-C quits; \
            a lost connection is retried. When stdout is not a terminal it prints a header, \
            then one line per interval (the first after two readings), like redis-cli --stat; \
            --count ends it. Its last two columns are the slowest channel's worst lateness \
            (slow_ms) and its name (slowest), - when no channel's ticks ran late. With --json \
            (on a terminal too) each line is one JSON object with the same figures, unrounded \
            and named as in stats (rates end in _per_s). \
            Set NO_COLOR (any value) for no colours. Needs role watch.

            Examples:
              outatime top
              outatime top --interval 5 --host boards.example --tls --token "$TOKEN"
              outatime top --count 10 > rates.txt
              outatime top --count 60 --json > rates.jsonl
            """)

    @Option(help: ArgumentHelp("Seconds between two readings (0.1–3600).", valueName: "seconds"))
    var interval: Double = 1

    @Option(help: ArgumentHelp("Stop after this many lines of rates (one per interval).", valueName: "n"))
    var count: Int?

    @Option(help: ArgumentHelp("How many busiest channels to show (0–50; 0 never sends list).", valueName: "n"))
    var channels = 5

    @OptionGroup var options: ConnectionOptions

    func validate() throws {
        guard (0.1...3600).contains(interval) else {
            throw ValidationError("--interval \(interval) is out of range: give seconds from 0.1 to 3600")
        }
        if let count, count < 1 { throw ValidationError("--count \(count) must be at least 1") }
        guard (0...50).contains(channels) else { throw ValidationError("--channels \(channels) must be from 0 to 50") }
    }

    func run() throws {
        Signal.ignore(SIGPIPE)
        Signal.unblock([SIGINT, SIGTERM, SIGWINCH])
        let loop = try Loop()
        var clientOptions = options.clientOptions
        clientOptions.reconnect = true
        var board = TopBoard(server: "\(options.host):\(options.port)", intervalS: interval)
        board.channelRows = channels
        let session = TopSession(loop: loop, options: clientOptions, board: board, count: count,
                                 interactive: !options.json && TTY.isTerminal(1) && TTY.isTerminal(0), json: options.json)
        try session.start()
        _ = loop.run()
        session.restoreTerminal()
        try? loop.close()
        if let failure = session.failure {
            Output.fail(failure.message)
            throw ExitCode(failure.code)
        }
    }
}

/// One `top` run on the main thread's loop: a timer polls `stats` (and
/// `list`), replies become samples, samples become a screen or a line.
final class TopSession {
    let loop: Loop
    let options: ClientOptions
    let connection: OutaTimeConnection
    let interactive: Bool
    /// Lines as JSON objects (`--json`) instead of columns.
    let json: Bool
    let count: Int?
    var board: TopBoard
    /// Why the run ended badly: the message and exit status.
    private(set) var failure: (message: String, code: Int32)?
    private var handles: [Handle] = []
    private var screen: FullScreen?
    private var painter = ScreenPainter(colour: ScreenPainter.colourWanted(environment: ProcessInfo.processInfo.environment))
    private var everConnected = false
    private var finished = false
    private var polling = false
    private var polls = 0
    private var previous: TopSample?
    private var latest: TopSample?
    private var rates: TopRates?
    private var activity = ChannelActivity()
    private var linesPrinted = 0

    init(loop: Loop, options: ClientOptions, board: TopBoard, count: Int?, interactive: Bool, json: Bool = false) {
        self.json = json
        self.loop = loop
        self.options = options
        self.board = board
        self.count = count
        self.interactive = interactive
        connection = OutaTimeConnection(loop: loop, options: options)
    }

    func start() throws {
        for signum in [SIGINT, SIGTERM] {
            let signal = Signal(loop: loop)
            try signal.start(signum) { [unowned self] _ in quit() }
            handles.append(signal)
        }
        if interactive { try startTerminal() }
        connection.onStateChange = { [unowned self] state in connectionChanged(state) }
        connection.onServerError = { [unowned self] error in board.status = "server: \(error.code): \(error.message)"; draw() }
        connection.connect()
        let timer = UV.Timer(loop: loop)
        let every = UInt64(board.intervalS * 1000)
        timer.start(timeoutMs: 0, repeatMs: every) { [unowned self] in poll() }
        handles.append(timer)
        draw()
    }

    private func connectionChanged(_ state: ConnectionState) {
        switch state {
        case .ready:
            board.connection = everConnected ? "reconnected" : "connected"
            if !everConnected && !interactive && !json { StandardOutput.writeAll(TopLines.header + "\n") }
            everConnected = true
        case .reconnecting(let attempt, _):
            guard everConnected else {
                // Never reached: a script must not wait forever.
                return fail(ExitStatus.message(connection.lastDisconnect, host: options.host, port: options.port),
                            code: ExitStatus.unreachable)
            }
            board.connection = "reconnecting… attempt \(attempt)"
            previous = nil
            rates = nil
            if !interactive {
                FileHandle.standardError.write(Data("outatime: connection lost, reconnecting (attempt \(attempt))\n".utf8))
            }
        case .connecting: board.connection = everConnected ? "reconnecting…" : "connecting…"
        case .closed(let reason):
            board.connection = "closed" + (reason.map { ": \($0)" } ?? "")
            if !finished {
                return fail(ExitStatus.closed(reason, everConnected: everConnected, host: options.host, port: options.port),
                            code: ExitStatus.after(reason))
            }
        case .idle: break
        }
        draw()
    }

    // MARK: polling

    /// One reading: `stats`, then (when due) one `list` page. A reading
    /// still in flight makes the next tick skip, so polls never pile up.
    private func poll() {
        guard !finished, !polling, connection.isReady else { return }
        polling = true
        polls += 1
        let timeout = UInt64(max(5, board.intervalS * 2) * 1000)
        connection.request("stats", timeoutMs: timeout) { [unowned self] result in
            switch result {
            case .success(let stats):
                loop.updateTime()
                took(TopSample(atMs: loop.now, stats: stats))
            case .failure(.server(let error)):
                polling = false
                return fail("\(error.code): \(error.message)", code: 1)
            case .failure(let error):
                polling = false
                board.status = "stats: \(error)"
                draw()
            }
        }
    }

    private func took(_ sample: TopSample) {
        if let previous { rates = TopRates(from: previous, to: sample) }
        previous = sample
        latest = sample
        if !interactive, let rates {
            StandardOutput.writeAll((json ? TopLines.json(rates) : TopLines.line(rates)) + "\n")
            linesPrinted += 1
            if let count, linesPrinted >= count { return quit() }
        }
        // Listing every channel is O(channels) for the server: above one
        // page, read it less often so its cost per second stays bounded.
        let pages = max(1, (sample.int("channels") + 999) / 1000)
        guard interactive, board.channelRows > 0, polls % pages == 1 % pages else {
            polling = false
            return draw()
        }
        connection.request("list", fields: ["limit": .int(1000)]) { [unowned self] result in
            polling = false
            if case .success(let list) = result {
                loop.updateTime()
                activity.update(list: list, atMs: loop.now)
            }
            draw()
        }
    }

    private func fail(_ message: String, code: Int32) {
        guard failure == nil else { return }
        failure = (message, code)
        quit()
    }

    // MARK: terminal

    private func startTerminal() throws {
        let screen = try FullScreen(loop: loop, clear: false,
                                    onKeys: { [unowned self] bytes in keys(bytes) },
                                    onEnd: { [unowned self] in quit() },
                                    onResize: { [unowned self] in
                                        painter.invalidate()
                                        draw()
                                    })
        self.screen = screen
        handles += screen.handles
    }

    func restoreTerminal() {
        screen?.restore(colour: painter.colour)
    }

    private func draw() {
        guard screen?.isActive == true, !finished else { return }
        let lines = TopRender.lines(board: board, sample: latest, rates: rates, channels: activity,
                                    width: max(20, screen?.size.columns ?? 80), height: max(6, screen?.size.rows ?? 24))
        StandardOutput.writeAll(painter.frame(lines))
    }

    private func keys(_ bytes: [UInt8]) {
        for byte in bytes {
            if byte == 0x03 || byte == UInt8(ascii: "q") || byte == UInt8(ascii: "Q") { return quit() }
            if board.showHelp {
                board.showHelp = false
            } else if byte == UInt8(ascii: "?") {
                board.showHelp = true
            }
        }
        draw()
    }

    func quit() {
        guard !finished else { return }
        finished = true
        restoreTerminal()
        connection.close()
        for handle in handles { handle.close() }
        handles = []
    }
}
