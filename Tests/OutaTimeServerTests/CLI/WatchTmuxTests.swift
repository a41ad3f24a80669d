import OutaTimeTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `outatime watch` tried as a new user would, in a real terminal (tmux):
/// the DeLorean's speed climbing live and the times swapping, a timer
/// counting down, a resize, and a server restart. Every wait polls
/// capture-pane (~50 ms) up to a deadline; each test has its own tmux
/// socket and its own server.
@Suite("outatime watch in tmux", .serialized, .enabled(if: Tmux.path != nil, "tmux is not installed"))
struct WatchTmuxTests {
    static var outatime: String { WatchTests.outatimeURL.path }

    /// The text after `label` on the first screen line containing it.
    static func field(_ screen: String, _ label: String) -> String? {
        for line in screen.split(separator: "\n", omittingEmptySubsequences: false) {
            guard let range = line.range(of: label) else { continue }
            return line[range.upperBound...].trimmingCharacters(in: .whitespaces)
        }
        return nil
    }

    /// `NN` of `SPEED  NN MPH  status`, and the status.
    static func speed(_ screen: String) -> (mph: Int, status: String)? {
        guard let text = field(screen, "SPEED") else { return nil }
        let parts = text.split(separator: " ")
        guard parts.count >= 2, parts[1] == "MPH", let mph = Int(parts[0]) else { return nil }
        return (mph, parts.count > 2 ? String(parts[2]) : "")
    }

    @Test("DeLorean: t makes the speed climb live to 88, then the times swap")
    func deloreanTrip() throws {
        try withTestServer({ $0.deloreanTickMs = 20 }) { server in
            let pane = TmuxPane(command: "\(Self.outatime) watch delorean/x --port \(server.port) --name tmux --for 60")
            defer { pane.close() }

            let (shown, first) = pane.wait(timeout: 10) {
                $0.contains("delorean/x") && Self.field($0, "PRESENT TIME")?.contains("---") == false
            }
            try #require(shown, "screen:\n\(first)")
            #expect(first.contains("t travel"))
            let oldPresent = try #require(Self.field(first, "PRESENT TIME"))
            #expect(Self.speed(first)?.mph == 0)

            // A second terminal sets the destination; this board shows it live.
            let set = try CLITests.outatime(["delorean", "set-destination", "x", "1955-11-12T22:04:00Z"], port: server.port)
            #expect(set.status == 0, "stderr: \(set.stderr)")
            let (destined, second) = pane.wait(timeout: 10) {
                Self.field($0, "DESTINATION TIME") == "NOV 12 1955 10:04 PM"
            }
            try #require(destined, "screen:\n\(second)")

            pane.send("t")
            var samples: [Int] = []
            let (arrived, last) = pane.wait(timeout: 15) { screen in
                if let (mph, status) = Self.speed(screen), status == "accelerating", samples.last != mph {
                    samples.append(mph)
                }
                return Self.field(screen, "PRESENT TIME") == "NOV 12 1955 10:04 PM"
            }
            try #require(arrived, "screen:\n\(last)\nspeeds seen: \(samples)")
            #expect(samples.count >= 3, "speeds seen while accelerating: \(samples)")
            #expect(samples == samples.sorted(), "speeds only climb: \(samples)")
            // 0 mph is accelerating too until the first tick (acceleration_started
            // leaves the kerb at 0): a slow screen capture may catch it first.
            #expect(samples.allSatisfy { (0...88).contains($0) }, "speeds: \(samples)")
            #expect(samples.dropFirst().allSatisfy { $0 >= 1 }, "only the first sample may be 0: \(samples)")
            #expect(Self.field(last, "LAST TIME DEPARTED") == oldPresent, "screen:\n\(last)")
            #expect(Self.speed(last)?.mph == 0, "screen:\n\(last)")
            #expect(Self.speed(last)?.status == "parked", "screen:\n\(last)")
        }
    }

    @Test("timers: Enter on the selected timer starts viewing, and it counts down")
    func timerCountdown() throws {
        try withTestServer { server in
            let add = try CLITests.outatime(["timers", "add", "x", "--event", "Clock tower", "--in", "5s"], port: server.port)
            #expect(add.status == 0, "stderr: \(add.stderr)")
            let pane = TmuxPane(command: "\(Self.outatime) watch timers/x --port \(server.port) --name tmux --for 60")
            defer { pane.close() }

            let (shown, first) = pane.wait(timeout: 10) { $0.contains("Clock tower") && $0.contains("00:00:05") }
            try #require(shown, "screen:\n\(first)")
            #expect(first.contains("▶"), "the only timer is selected")

            pane.send("Enter")
            var seen: [Int] = []
            let (countedDown, last) = pane.wait(timeout: 10) { screen in
                guard let row = screen.split(separator: "\n").first(where: { $0.contains("Clock tower") }),
                      let range = row.range(of: "00:00:0"),
                      let second = Int(String(row[range.upperBound])) else { return false }
                if seen.last != second { seen.append(second) }
                return seen.filter { $0 < 5 }.count >= 2
            }
            #expect(countedDown, "screen:\n\(last)\nseconds seen: \(seen)")
            #expect(last.contains("running"), "screen:\n\(last)")
            #expect(seen == seen.sorted(by: >), "seconds only fall: \(seen)")
        }
    }

    @Test("resizing the terminal redraws the board to the new size")
    func resize() throws {
        try withTestServer { server in
            let add = try CLITests.outatime(["timers", "add", "x", "--event", "Clock tower", "--in", "1h"], port: server.port)
            #expect(add.status == 0, "stderr: \(add.stderr)")
            let channels = ["delorean/x", "laps/x", "timers/x"]
            let pane = TmuxPane(command: "\(Self.outatime) watch \(channels.joined(separator: " ")) --port \(server.port) --name tmux --for 60")
            defer { pane.close() }

            func laidOut(_ screen: String, width: Int, height: Int) -> Bool {
                let lines = screen.split(separator: "\n", omittingEmptySubsequences: false)
                    .map { String($0) }
                    .reversed().drop { $0.isEmpty }.reversed()
                return channels.allSatisfy { screen.contains(" \($0) ") }
                    && screen.contains("PRESENT TIME") && screen.contains("LAP 0") && screen.contains("Clock tower")
                    && lines.first?.hasPrefix(" OutaTime ") == true
                    && lines.count == height && lines.last?.contains("q quit") == true
                    && lines.allSatisfy { $0.count <= width }
            }

            let (shown, first) = pane.wait(timeout: 10) { laidOut($0, width: 120, height: 40) }
            try #require(shown, "screen:\n\(first)")

            for (width, height) in [(80, 30), (50, 24)] {
                pane.resize(width: width, height: height)
                let (fits, screen) = pane.wait(timeout: 10) { laidOut($0, width: width, height: height) }
                #expect(fits, "at \(width)×\(height), screen:\n\(screen)")
                // Joined, a line the terminal wrapped would show as longer than the pane.
                let joined = pane.capture(joined: true).components(separatedBy: "\n").map { $0.count }
                #expect(joined.allSatisfy { $0 <= width }, "at \(width)×\(height), line widths: \(joined)")
            }
        }
    }

    /// Starts `outatime-server` on `port` (0: any) and `db`; retries briefly
    /// while the port is still taken by a server that just exited.
    static func startServer(port: Int, db: String) throws -> (ServerProcess, Int) {
        let deadline = Date().addingTimeInterval(10)
        while true {
            let server = try ServerProcess(["--port", "\(port)", "--db", db])
            if let listening = server.awaitListening(timeout: 10) { return (server, listening.port) }
            let stderr = server.stderrText
            _ = server.waitForExit(timeout: 2)
            guard Date() < deadline else {
                Issue.record("server did not start on port \(port): \(stderr)")
                throw CancellationError()
            }
            usleep(200_000)
        }
    }

    @Test("stopping the server shows reconnecting; restarting it brings the board back")
    func reconnect() throws {
        let folder = try TemporaryFolder()
        let db = folder.path("outatime.sqlite")
        var (server, port) = try Self.startServer(port: 0, db: db)
        defer { server.send(signal: SIGKILL) }
        for action in ["start", "lap", "lap", "stop"] {
            let run = try CLITests.outatime(["laps", action, "x"], port: port)
            #expect(run.status == 0, "\(action) stderr: \(run.stderr)")
        }

        let pane = TmuxPane(command: "\(Self.outatime) watch laps/x --port \(port) --name tmux --for 90")
        defer { pane.close() }
        let (shown, first) = pane.wait(timeout: 10) { $0.contains("connected") && $0.contains("laps: 2") }
        try #require(shown, "screen:\n\(first)")

        server.send(signal: SIGTERM)
        #expect(server.waitForExit(timeout: 15) == 0, "stderr: \(server.stderrText)")
        // The connection has a line of its own, under the title.
        let (lost, second) = pane.wait(timeout: 10) { screen in
            let status = screen.split(separator: "\n", omittingEmptySubsequences: false).dropFirst().first ?? ""
            return status.contains("reconnecting") && status.contains("the server is shutting down (bye server_shutdown)")
                && screen.contains("STALE")
        }
        #expect(lost, "screen:\n\(second)")

        (server, _) = try Self.startServer(port: port, db: db)
        let (back, third) = pane.wait(timeout: 20) { screen in
            let status = screen.split(separator: "\n", omittingEmptySubsequences: false).dropFirst().first ?? ""
            return (status.contains("recovered") || status.contains("● connected")) && screen.contains("laps: 2")
                && !screen.contains("STALE")
        }
        #expect(back, "screen:\n\(third)")
        #expect(third.contains("lap 1  ") && third.contains("lap 2  "), "screen:\n\(third)")
        withExtendedLifetime(folder) {}
    }
}
