import OutaTimeTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `outatime watch`: the line mode (stdout a pipe) and the full-screen
/// board (through tmux), against a real in-process server.
@Suite("outatime watch")
struct WatchTests {
    static var outatimeURL: URL {
        ServerProcess.executableURL.deletingLastPathComponent().appendingPathComponent("outatime")
    }

    /// Reads lines from a pipe with bounded waits.
    final class LineReader {
        let fd: Int32
        private var buffer: [UInt8] = []
        private(set) var lines: [String] = []
        private(set) var ended = false

        init(_ pipe: Pipe) { fd = pipe.fileHandleForReading.fileDescriptor }

        /// Reads until a line satisfies `match`, the pipe ends, or `timeout` passes.
        @discardableResult
        func wait(timeout: Double, for match: (String) -> Bool) -> String? {
            let deadline = Date().addingTimeInterval(timeout)
            var checked = 0
            while true {
                while checked < lines.count {
                    defer { checked += 1 }
                    if match(lines[checked]) { return lines[checked] }
                }
                let remaining = deadline.timeIntervalSinceNow
                if ended || remaining <= 0 { return nil }
                var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&pfd, 1, Int32(remaining * 1000) + 1) > 0 else { continue }
                var chunk = [UInt8](repeating: 0, count: 65_536)
                let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
                if n <= 0 { ended = true; continue }
                buffer += chunk[0..<n]
                while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    lines.append(String(decoding: buffer[..<newline], as: UTF8.self))
                    buffer.removeSubrange(...newline)
                }
            }
        }
    }

    @Test("piped, watch prints one line per tick and event of a whole trip")
    func lineModeTrip() throws {
        try withTestServer({ $0.deloreanTickMs = 5 }) { server in
            let set = try CLITests.outatime(["delorean", "set-destination", "x", "1985-10-26T01:21:00Z"], port: server.port)
            #expect(set.status == 0, "stderr: \(set.stderr)")

            let process = Process()
            process.executableURL = Self.outatimeURL
            process.arguments = ["watch", "delorean/x", "--for", "3", "--port", "\(server.port)", "--name", "watcher"]
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            process.standardInput = FileHandle.nullDevice
            try process.run()
            defer {
                if process.isRunning { process.terminate() }
                process.waitUntilExit()
            }
            let reader = LineReader(out)
            let synced = reader.wait(timeout: 10) { $0.hasPrefix("delorean/x snapshot") }
            #expect(synced != nil, "lines: \(reader.lines)")

            let travel = try CLITests.outatime(["delorean", "travel", "x"], port: server.port)
            #expect(travel.status == 0, "stderr: \(travel.stderr)")

            let trip = reader.wait(timeout: 10) { $0.contains(" time_travel ") }
            #expect(trip != nil, "lines: \(reader.lines)")
            // --for 3 ends it: the pipe closes.
            reader.wait(timeout: 10) { _ in false }
            #expect(reader.ended)

            let lines = reader.lines
            #expect(lines.first?.hasPrefix("connection connect") == true)
            #expect(lines.contains("connection connected 127.0.0.1:\(server.port)"))
            #expect(lines.contains { $0.hasPrefix("delorean/x #") && $0.contains(" acceleration_started") })
            let speeds = lines.compactMap { line -> Int? in
                guard line.hasPrefix("delorean/x tick speed_mph=") else { return nil }
                return Int(line.dropFirst("delorean/x tick speed_mph=".count))
            }
            #expect(speeds == Array(1...88), "speeds: \(speeds)")
            let travelLine = try #require(lines.firstIndex { $0.contains(" time_travel ") })
            let lastTick = try #require(lines.lastIndex { $0.contains(" tick ") })
            #expect(lastTick < travelLine)
            #expect(lines[travelLine].contains("present_time=1985-10-26T01:21:00Z"))
        }
    }

    /// `watch --jsonl` as a child process; lines parsed as JSON objects.
    final class JSONLWatch {
        let process = Process()
        let reader: LineReader

        init(_ arguments: [String], port: Int) throws {
            process.executableURL = WatchTests.outatimeURL
            process.arguments = ["watch", "--jsonl"] + arguments + ["--port", "\(port)", "--name", "jsonl"]
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            process.standardInput = FileHandle.nullDevice
            reader = LineReader(out)
            try process.run()
        }

        deinit {
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
        }

        static func object(_ line: String) -> [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]) ?? [:]
        }

        /// The first object of `type` that `match` accepts, past the first
        /// `after` lines (each line is unique: it carries its timestamps),
        /// waiting up to `timeout`.
        @discardableResult
        func wait(_ type: String, after: Int = 0, timeout: Double = 10,
                  _ match: ([String: Any]) -> Bool = { _ in true }) -> [String: Any]? {
            let earlier = Set(reader.lines.prefix(after))
            return reader.wait(timeout: timeout) { line in
                guard !earlier.contains(line) else { return false }
                let object = Self.object(line)
                return object["type"] as? String == type && match(object)
            }.map(Self.object)
        }

        var objects: [[String: Any]] { reader.lines.map(Self.object) }
    }

    @Test("--jsonl: every trip start shows speed 0, never the previous trip's 88 mph (issue 27)")
    func jsonlTripStart() throws {
        try withTestServer({ $0.deloreanTickMs = 5 }) { server in
            let set = try CLITests.outatime(["delorean", "set-destination", "x", "1985-10-26T01:21:00Z"], port: server.port)
            #expect(set.status == 0, "stderr: \(set.stderr)")
            let watch = try JSONLWatch(["delorean/x", "--for", "30"], port: server.port)
            #expect(watch.wait("sync") != nil, "lines: \(watch.reader.lines)")
            for trip in 1...3 {
                let travel = try CLITests.outatime(["delorean", "travel", "x"], port: server.port)
                #expect(travel.status == 0, "stderr: \(travel.stderr)")
                let arrived = watch.wait("event") { $0["event"] as? String == "time_travel" && ($0["seq"] as? Int ?? 0) >= 1 + 2 * trip }
                #expect(arrived != nil, "trip \(trip): \(watch.reader.lines.suffix(5))")
            }
            let objects = watch.objects
            // After each acceleration_started, the first values shown are the new trip's.
            var checked = 0
            for (index, object) in objects.enumerated() where object["type"] as? String == "event"
                && object["event"] as? String == "acceleration_started" {
                let shown = try #require(objects[(index + 1)...].first { $0["type"] as? String == "shown" })
                let values = try #require(shown["values"] as? [String: Any])
                #expect(values["status"] as? String == "accelerating")
                #expect((values["speed_mph"] as? Int ?? -1) <= 1, "a trip start showed \(values)")
                checked += 1
            }
            #expect(checked == 3)
            let speeds = objects.compactMap { object -> Int? in
                guard object["type"] as? String == "shown", let values = object["values"] as? [String: Any],
                      values["status"] as? String == "accelerating" else { return nil }
                return values["speed_mph"] as? Int
            }
            #expect(speeds.contains(88), "the ticks were shown")
            #expect(objects.allSatisfy { $0["mono_ms"] is Int && $0["wall"] is String }, "every object is stamped")
        }
    }

    @Test("--jsonl: a server that goes silent (SIGSTOP) turns the board stale within seconds, with the age; live again when it answers")
    func jsonlSilentServer() throws {
        let server = try ServerProcess(["--port", "0"])
        let listening = try #require(server.awaitListening())
        defer { server.send(signal: SIGCONT) }
        let set = try CLITests.outatime(["delorean", "set-destination", "x", "1985-10-26T01:21:00Z"], port: listening.port)
        #expect(set.status == 0, "stderr: \(set.stderr)")
        let watch = try JSONLWatch(["delorean/x", "--for", "60"], port: listening.port)
        #expect(watch.wait("shown") != nil, "lines: \(watch.reader.lines)")
        // Idle and quiet for a while: the watcher's pings keep it live.
        Thread.sleep(forTimeInterval: 2.5)
        #expect(!watch.objects.contains { $0["type"] as? String == "freshness" && $0["live"] as? Bool == false
            && $0["why"] as? String != "disconnected" }, "a quiet, healthy server is not stale: \(watch.reader.lines)")

        let before = watch.reader.lines.count
        server.send(signal: SIGSTOP)
        let stoppedAt = Date()
        let stale = watch.wait("freshness", after: before) { $0["live"] as? Bool == false && $0["why"] as? String == "silent_link" }
        let took = Date().timeIntervalSince(stoppedAt)
        let panel = try #require(stale, "lines: \(watch.reader.lines)")
        #expect(panel["channel"] as? String == "delorean/x")
        #expect((panel["age_ms"] as? Int ?? 0) >= 1_500)
        #expect(took < 6, "stale \(took) s after the server went silent")  // 1–2.5 s expected; generous on a loaded machine
        #expect(watch.wait("link", after: before) { $0["live"] as? Bool == false } != nil)

        let silent = watch.reader.lines.count
        server.send(signal: SIGCONT)
        let live = watch.wait("freshness", after: silent) { $0["live"] as? Bool == true }
        #expect(live != nil, "live again after the server answers: \(watch.reader.lines.suffix(5))")
    }

    @Test("--jsonl: a server restart mid-trip says why it reconnects (bye server_shutdown) and that it recovered, with the event replayed")
    func jsonlRestartReasons() throws {
        let folder = try TemporaryFolder()
        let database = folder.path("outatime.sqlite")
        let first = try ServerProcess(["--port", "0", "--db", database], folder: folder)
        let port = try #require(first.awaitListening()).port
        let set = try CLITests.outatime(["delorean", "set-destination", "x", "1985-10-26T01:21:00Z"], port: port)
        #expect(set.status == 0, "stderr: \(set.stderr)")
        let watch = try JSONLWatch(["delorean/x", "--for", "60"], port: port)
        #expect(watch.wait("sync") != nil, "lines: \(watch.reader.lines)")
        let travel = try CLITests.outatime(["delorean", "travel", "x"], port: port)
        #expect(travel.status == 0, "stderr: \(travel.stderr)")
        #expect(watch.wait("shown") { ($0["values"] as? [String: Any])?["speed_mph"] as? Int ?? 0 >= 2 } != nil)

        first.send(signal: SIGTERM)  // mid-trip: the restarted server aborts the trip (an event)
        #expect(first.waitForExit() != nil)
        let down = try #require(watch.wait("connection") { $0["state"] as? String == "reconnecting" },
                                "lines: \(watch.reader.lines.suffix(5))")
        #expect(down["reason_code"] as? String == "bye:server_shutdown", "\(down)")
        #expect((down["reason"] as? String)?.contains("shutting down") == true, "\(down)")
        #expect(watch.wait("freshness") { $0["live"] as? Bool == false && $0["why"] as? String == "disconnected" } != nil)

        let second = try ServerProcess(["--port", "\(port)", "--db", database], folder: folder)
        #expect(second.awaitListening() != nil, "stderr: \(second.stderrText)")
        let back = try #require(watch.wait("connection", timeout: 20) { $0["state"] as? String == "recovered" },
                                "lines: \(watch.reader.lines.suffix(5))")
        #expect(back["reason_code"] as? String == "bye:server_shutdown", "the recovery says what it recovered from: \(back)")
        let sync = try #require(watch.wait("sync") { $0["method"] as? String == "recovered" })
        #expect(sync["events"] as? Int == 1, "acceleration_aborted replayed: \(sync)")
        let aborted = watch.wait("event") { $0["event"] as? String == "acceleration_aborted" }
        #expect(aborted?["replayed"] as? Bool == true)
        let parked = watch.wait("shown") { ($0["values"] as? [String: Any])?["status"] as? String == "parked" }
        #expect((parked?["values"] as? [String: Any])?["speed_mph"] as? Int == 0, "no speed of the aborted trip: \(String(describing: parked))")
        #expect(watch.wait("freshness") { $0["live"] as? Bool == true && ($0["mono_ms"] as? Int ?? 0) > (back["mono_ms"] as? Int ?? 0) - 1 } != nil)
    }

    @Test("--jsonl: a reconnect attempt refused with bye server_busy says so (last_try), beside why the link dropped")
    func jsonlLastTryBye() throws {
        let folder = try TemporaryFolder()
        let database = folder.path("outatime.sqlite")
        let first = try ServerProcess(["--port", "0", "--db", database], folder: folder)
        let port = try #require(first.awaitListening()).port
        let watch = try JSONLWatch(["delorean/x", "--for", "60"], port: port)
        #expect(watch.wait("sync") != nil, "lines: \(watch.reader.lines)")
        first.send(signal: SIGTERM)
        #expect(first.waitForExit() != nil)
        #expect(watch.wait("connection") { $0["state"] as? String == "reconnecting" } != nil)
        // The watcher is stopped while the second server's only place is
        // taken, so that its next attempts are refused whatever the timing.
        let pid = watch.process.processIdentifier
        #expect(kill(pid, SIGSTOP) == 0)
        let second = try ServerProcess(["--port", "\(port)", "--db", database, "--max-connections-per-address", "1"],
                                       folder: folder)
        #expect(second.awaitListening() != nil, "stderr: \(second.stderrText)")
        let occupant = try TestClient(port: port)
        _ = try occupant.hello()
        let seen = watch.reader.lines.count
        #expect(kill(pid, SIGCONT) == 0)
        let refused = try #require(watch.wait("connection", after: seen, timeout: 30) {
            $0["last_try_code"] as? String == "bye:server_busy"
        }, "lines: \(watch.reader.lines.suffix(6))")
        #expect(refused["state"] as? String == "reconnecting", "\(refused)")
        #expect(refused["last_try"] as? String == "the server is full (bye server_busy)", "\(refused)")
        #expect(refused["reason_code"] as? String == "bye:server_shutdown", "why the link dropped stays: \(refused)")
        occupant.closeAbruptly()
        #expect(watch.wait("connection", timeout: 30) { $0["state"] as? String == "recovered" } != nil,
                "lines: \(watch.reader.lines.suffix(6))")
        second.send(signal: SIGTERM)
        #expect(second.waitForExit() != nil)
    }

    @Test("in a terminal (tmux), keys start and lap a session",
          .enabled(if: Tmux.path != nil, "tmux is not installed"))
    func tmuxLaps() throws {
        try withTestServer { server in
            let socket = "outatime-watch-\(getpid())-\(server.port)"
            let command = "\(Self.outatimeURL.path) watch laps/x --port \(server.port) --name tmux --for 30"
            _ = Tmux.run(socket, ["new-session", "-d", "-s", "watch", "-x", "120", "-y", "40", command])
            defer { Tmux.killServer(socket) }

            let (shown, first) = Tmux.waitForPane(socket, timeout: 10) { $0.contains("laps/x") && $0.contains("LAP 0") }
            #expect(shown, "screen:\n\(first)")
            #expect(first.contains("s start/stop"))

            _ = Tmux.run(socket, ["send-keys", "-t", "watch", "s"])
            let (running, second) = Tmux.waitForPane(socket, timeout: 10) { $0.contains("running") && $0.contains("LAP 1") }
            #expect(running, "screen:\n\(second)")

            _ = Tmux.run(socket, ["send-keys", "-t", "watch", "l"])
            let (lapped, third) = Tmux.waitForPane(socket, timeout: 10) { $0.contains("lap 1  ") && $0.contains("LAP 2") }
            #expect(lapped, "screen:\n\(third)")

            _ = Tmux.run(socket, ["send-keys", "-t", "watch", "q"])
            let (gone, _) = Tmux.waitForPane(socket, timeout: 10) { !$0.contains("LAP 2") }
            #expect(gone, "q leaves the alternate screen")
        }
    }
}
