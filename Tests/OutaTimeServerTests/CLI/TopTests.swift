import OutaTimeTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `outatime top` tried as an operator would: the full screen in tmux with
/// its rates moving after commands, the `?` overlay and `q`; the line mode
/// when piped, ended by `--count`; and `outatime watch`'s polish (wide
/// characters, NO_COLOR, the overlay, bytes per second), against real servers.
@Suite("outatime top and watch polish", .serialized, .enabled(if: Tmux.path != nil, "tmux is not installed"))
struct TopTests {
    static var outatime: String { WatchTests.outatimeURL.path }

    /// The value in front of `label` on the screen (`   2.0 commands/s`).
    static func figure(_ screen: String, _ label: String) -> Double? {
        for line in screen.split(separator: "\n") {
            guard let range = line.range(of: " " + label) else { continue }
            let before = line[..<range.lowerBound].split(separator: " ").last.map(String.init) ?? ""
            return Double(before)
        }
        return nil
    }

    /// Starts capturing the bytes the program in `pane` writes to `path`.
    static func recordOutput(of pane: TmuxPane, to path: String) {
        Tmux.run(pane.socket, ["pipe-pane", "-o", "-t", "watch", "cat >> \(path)"])
    }

    @Test("full screen: commands/s, events/s and the busiest channel move after commands; ? overlay; q quits")
    func fullScreen() throws {
        try withTestServer { server in
            let pane = TmuxPane(command: "\(Self.outatime) top --interval 0.2 --port \(server.port) --name top")
            defer { pane.close() }
            let (shown, first) = pane.wait(timeout: 10) { Self.figure($0, "commands/s") == 0 && $0.contains("no channels") }
            try #require(shown, "screen:\n\(first)")
            #expect(first.contains("1 open"), "top's own connection: \(first)")

            var commandRates: [Double] = []
            var eventRates: [Double] = []
            for action in ["start", "lap", "lap", "lap", "lap", "stop"] {
                let run = try CLITests.outatime(["laps", action, "top"], port: server.port)
                #expect(run.status == 0, "\(action): \(run.stderr)")
                let screen = pane.capture()
                if let rate = Self.figure(screen, "commands/s") { commandRates.append(rate) }
                if let rate = Self.figure(screen, "events/s") { eventRates.append(rate) }
            }
            let (moved, screen) = pane.wait(timeout: 10) { screen in
                if let rate = Self.figure(screen, "commands/s") { commandRates.append(rate) }
                if let rate = Self.figure(screen, "events/s") { eventRates.append(rate) }
                let row = screen.split(separator: "\n").first { $0.contains("laps/top") }
                return commandRates.contains { $0 > 0 } && eventRates.contains { $0 > 0 }
                    && row?.split(separator: " ").dropFirst(2).first == "6"
            }
            #expect(moved, "screen:\n\(screen)\ncommands/s seen: \(commandRates)\nevents/s seen: \(eventRates)")

            pane.send("?")
            let (help, overlay) = pane.wait(timeout: 5) { $0.contains("┌") && $0.contains("mean time a storage group took") }
            #expect(help, "screen:\n\(overlay)")
            pane.send("x")
            let (hidden, after) = pane.wait(timeout: 5) {
                !$0.contains("┌") && $0.contains("BUSIEST CHANNELS") && $0.contains("SLOWEST CHANNELS")
            }
            #expect(hidden, "any key hides the help; screen:\n\(after)")

            pane.send("q")
            let (quit, last) = pane.wait(timeout: 5) { _ in
                Tmux.run(pane.socket, ["has-session", "-t", "watch"], capture: true).isEmpty
                    && Tmux.run(pane.socket, ["list-sessions"], capture: true).isEmpty
            }
            #expect(quit, "q ends top (and so the tmux session); screen:\n\(last)")
        }
    }

    @Test("piped: a header, then one line per interval, --count lines, exit 0")
    func lineMode() throws {
        try withTestServer { server in
            let run = try CLITests.outatime(["top", "--interval", "0.2", "--count", "3"], port: server.port)
            #expect(run.status == 0, "stderr: \(run.stderr)")
            let lines = run.stdout.split(separator: "\n").map(String.init)
            try #require(lines.count == 4, "stdout:\n\(run.stdout)")
            #expect(lines[0].split(separator: " ").prefix(5) == ["conns", "subs", "deliv/s", "cmds/s", "events/s"])
            #expect(lines[0].split(separator: " ").suffix(2) == ["slow_ms", "slowest"])
            for line in lines.dropFirst() {
                let cells = line.split(separator: " ")
                #expect(cells.count == 14, "\(line)")
                #expect(cells.suffix(2) == ["-", "-"], "nothing ticks, so no channel is slow: \(line)")
                #expect(cells.first == "1", "top's own connection: \(line)")
                #expect(!line.contains("\u{1B}"), "no escape sequence when piped: \(line.debugDescription)")
            }
            let bad = try CLITests.outatime(["top", "--interval", "0"], port: server.port)
            #expect(bad.status == 64 && bad.stderr.contains("--interval 0.0 is out of range"), "\(bad.stderr)")
        }
    }

    @Test("top and watch: NO_COLOR writes no SGR sequence; without it colours are written")
    func noColour() throws {
        try withTestServer { server in
            let folder = try TemporaryFolder()
            for (command, ready) in [("top --interval 0.2", "BUSIEST CHANNELS"), ("watch laps/colour", "LAP 0")] {
                for noColour in [true, false] {
                    let path = folder.path("\(command.prefix(3))-\(noColour).out")
                    let prefix = noColour ? "env NO_COLOR=1 " : "env -u NO_COLOR "
                    let pane = TmuxPane(command: "\(prefix)\(Self.outatime) \(command) --port \(server.port) --name colour")
                    defer { pane.close() }
                    Self.recordOutput(of: pane, to: path)
                    let (shown, screen) = pane.wait(timeout: 10) { $0.contains(ready) }
                    try #require(shown, "screen:\n\(screen)")
                    pane.send("q")
                    _ = pane.wait(timeout: 5) { _ in Tmux.run(pane.socket, ["list-sessions"], capture: true).isEmpty }
                    let bytes = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
                    let sgr = bytes.range(of: #"\e\[[0-9;]*m"#, options: .regularExpression)
                    #expect(bytes.contains("\u{1B}["), "\(command): cursor moves are written")
                    if noColour {
                        #expect(sgr == nil, "\(command) NO_COLOR=1 wrote \(bytes[sgr!].debugDescription)")
                    } else {
                        #expect(sgr != nil, "\(command) writes colours without NO_COLOR")
                    }
                }
            }
        }
    }

    @Test("watch: a row with CJK and emoji lines up with an ASCII row; ? shows the keys; only changed lines are written")
    func wideCharacters() throws {
        try withTestServer({ $0.lapTickMs = 100 }) { server in
            for event in ["時計台の⏰ e\u{301}", "Clock tower"] {
                let add = try CLITests.outatime(["timers", "add", "wide", "--event", event, "--location", "Hill Valley", "--in", "1h"],
                                               port: server.port)
                #expect(add.status == 0, "stderr: \(add.stderr)")
            }
            let start = try CLITests.outatime(["laps", "start", "wide"], port: server.port)
            #expect(start.status == 0)
            let folder = try TemporaryFolder()
            let pane = TmuxPane(command: "\(Self.outatime) watch timers/wide laps/wide --port \(server.port) --name wide --for 60")
            defer { pane.close() }
            let (shown, screen) = pane.wait(timeout: 10) { $0.contains("Clock tower") && $0.contains("時計台") }
            try #require(shown, "screen:\n\(screen)")

            // Columns as a terminal counts them: these ideographs and ⏰ take 2, the
            // combining acute 0 (an oracle of its own, not the client's table).
            func column(of text: String, in line: Substring) -> Int? {
                guard let range = line.range(of: text) else { return nil }
                return line[..<range.lowerBound].unicodeScalars.reduce(0) { total, scalar in
                    total + ("時計台の⏰".unicodeScalars.contains(scalar) ? 2 : scalar == "\u{301}" ? 0 : 1)
                }
            }
            let rows = screen.split(separator: "\n")
            let wide = try #require(rows.first { $0.contains("時計台") })
            let ascii = try #require(rows.first { $0.contains("Clock tower") })
            for cell in ["Hill Valley", "01:00:00", "stopped"] {
                let a = column(of: cell, in: wide), b = column(of: cell, in: ascii)
                #expect(a != nil && a == b, "'\(cell)' at column \(a ?? -1) vs \(b ?? -1):\n\(wide)\n\(ascii)")
            }

            // A running stopwatch: 10 ticks a second, one line (and the header) changes.
            let path = folder.path("watch.out")
            Self.recordOutput(of: pane, to: path)
            Thread.sleep(forTimeInterval: 2)
            Tmux.run(pane.socket, ["pipe-pane", "-t", "watch"])
            let written = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            #expect(written > 0 && written < 4_000, "\(written) bytes in 2 s (a full repaint at each tick wrote ~10 kB/s here)")

            pane.send("?")
            let (help, overlay) = pane.wait(timeout: 5) { $0.contains("outatime watch: keys") && $0.contains("s  start/stop") }
            #expect(help, "screen:\n\(overlay)")
            pane.send("Escape")
            let (hidden, after) = pane.wait(timeout: 5) { !$0.contains("outatime watch: keys") && $0.contains("Clock tower") }
            #expect(hidden, "screen:\n\(after)")
        }
    }
}
