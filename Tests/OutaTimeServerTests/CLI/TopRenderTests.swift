import Foundation
import OutaTimeProtocol
import Testing
@testable import outatime

/// `outatime top`'s SLOWEST CHANNELS table and line-mode columns, rendered
/// from `stats` readings without a terminal or a server.
@Suite("top rendering")
struct TopRenderTests {
    static let late = """
        {"server": "outatime-server test", "uptime_s": 61, "connections": 1,
         "slowest_channels": [
           {"channel": "delorean/outatime", "tick_lateness_max_ms": 250, "ticks_late": 3},
           {"channel": "laps/morning-run", "tick_lateness_max_ms": 12, "ticks_late": 0}]}
        """

    static func sample(_ json: String) throws -> TopSample {
        TopSample(atMs: 1_000, stats: try JSONValue.parse(Data(json.utf8)))
    }

    /// The screen as text, without colours and styles.
    static func screen(_ sample: TopSample?, height: Int = 40, channels: ChannelActivity = ChannelActivity()) -> [String] {
        TopRender.lines(board: TopBoard(server: "127.0.0.1:1985", intervalS: 1), sample: sample, rates: nil,
                        channels: channels, width: 100, height: height)
            .map { $0.replacingOccurrences(of: #"\e\[[0-9;]*m"#, with: "", options: .regularExpression) }
    }

    /// The cells of the row that names `channel`.
    static func row(_ lines: [String], _ channel: String) -> [Substring]? {
        lines.first { $0.contains(channel) }?.split(separator: " ")
    }

    @Test("the section lists the server's slowest channels in its order, with worst lateness and late ticks")
    func slowestSection() throws {
        let lines = Self.screen(try Self.sample(Self.late))
        let title = try #require(lines.firstIndex { $0.hasPrefix("SLOWEST CHANNELS") }, "\(lines.joined(separator: "\n"))")
        #expect(lines.contains { $0.hasPrefix("BUSIEST CHANNELS") }, "the busiest stay")
        #expect(lines[title + 1].split(separator: " ") == ["CHANNEL", "WORST", "LATE", "LATE", "TICKS"])
        #expect(Self.row(lines, "delorean/outatime") == ["delorean/outatime", "250", "ms", "3"])
        #expect(Self.row(lines, "laps/morning-run") == ["laps/morning-run", "12", "ms", "0"])
        let first = try #require(lines.firstIndex { $0.contains("delorean/outatime") })
        #expect(first == title + 2 && lines[title + 3].contains("laps/morning-run"), "the server's order, worst first")
    }

    @Test("PROCESS shows the reads deferred per second (the server's read budget at work)")
    func deferredReads() throws {
        let previous = try Self.sample(#"{"uptime_s": 60, "reads_deferred": 100}"#)
        var current = try Self.sample(#"{"uptime_s": 62, "reads_deferred": 600}"#)
        current.atMs = 3_000
        let rates = try #require(TopRates(from: previous, to: current))
        let lines = TopRender.lines(board: TopBoard(server: "127.0.0.1:1985", intervalS: 1), sample: current, rates: rates,
                                    channels: ChannelActivity(), width: 100, height: 40)
            .map { $0.replacingOccurrences(of: #"\e\[[0-9;]*m"#, with: "", options: .regularExpression) }
        let process = try #require(lines.first { $0.hasPrefix("PROCESS") }, "\(lines.joined(separator: "\n"))")
        #expect(process.split(separator: " ").suffix(2) == ["250", "deferred/s"], "\(process)")
    }

    @Test("an empty list, an older server without the field, and no reading yet each say so")
    func emptyStates() throws {
        let none = Self.screen(try Self.sample(#"{"slowest_channels": []}"#))
        #expect(none.contains("  no channel's ticks ran late"), "\(none.joined(separator: "\n"))")
        let old = Self.screen(try Self.sample(#"{"connections": 1}"#))
        #expect(old.contains("  not reported by this server"), "\(old.joined(separator: "\n"))")
        let waiting = Self.screen(nil)
        #expect(waiting.contains { $0.hasPrefix("SLOWEST CHANNELS") } && !waiting.contains("  no channel's ticks ran late"))
    }

    @Test("on a 24-row terminal both tables keep their title and share the rows")
    func shortTerminal() throws {
        var activity = ChannelActivity()
        let list = (1...5).map { #"{"channel": "laps/busy-\#($0)", "seq": \#($0), "watchers": 0}"# }.joined(separator: ",")
        activity.update(list: try JSONValue.parse(Data(#"{"channels": [\#(list)]}"#.utf8)), atMs: 1_000)
        let slow = (1...5).map { #"{"channel": "laps/slow-\#($0)", "tick_lateness_max_ms": \#(100 - $0), "ticks_late": 1}"# }
        let sample = try Self.sample(#"{"connections": 1, "slowest_channels": [\#(slow.joined(separator: ","))]}"#)
        let lines = Self.screen(sample, height: 24, channels: activity)
        #expect(lines.count == 24)
        let text = lines.joined(separator: "\n")
        #expect(text.contains("BUSIEST CHANNELS") && text.contains("SLOWEST CHANNELS"), "\(text)")
        #expect(text.contains("laps/busy-") && text.contains("laps/slow-1 "), "rows of both, the worst first: \(text)")
        #expect(TopRender.shareRows(7, 5, 5) == (4, 3))
        #expect(TopRender.shareRows(7, 1, 5) == (1, 5))
        #expect(TopRender.shareRows(20, 5, 5) == (5, 5))
    }

    @Test("line mode ends with the slowest channel's worst lateness and name, - when none")
    func lineMode() throws {
        #expect(TopLines.header.split(separator: " ").suffix(2) == ["slow_ms", "slowest"])
        let previous = try Self.sample(#"{"uptime_s": 60, "slowest_channels": []}"#)
        var current = try Self.sample(Self.late)
        current.atMs = 2_000
        let late = try #require(TopRates(from: previous, to: current))
        let cells = TopLines.line(late).split(separator: " ")
        #expect(cells.count == TopLines.header.split(separator: " ").count, "\(cells)")
        #expect(cells.suffix(2) == ["250", "delorean/outatime"], "\(cells)")

        var quiet = try Self.sample(#"{"uptime_s": 61, "slowest_channels": []}"#)
        quiet.atMs = 2_000
        let onTime = try #require(TopRates(from: previous, to: quiet))
        #expect(TopLines.line(onTime).split(separator: " ").suffix(2) == ["-", "-"])
    }
    static let cluster = """
        {"server": "outatime-server test", "uptime_s": 61, "connections": 1, "channels": 3,
         "cluster": {"node": "n1", "store": "jetstream", "channels_owned": 3,
                     "nats": {"connected": true, "url": "nats://10.0.0.1:4222", "reconnects": 2,
                              "ack_retries": 5, "lost_acks_resolved": 1}}}
        """

    @Test("cluster mode: the header names the node, a CLUSTER row shows the NATS link, reconnects and channels owned, then the server's URL and ack retries")
    func clusterRow() throws {
        let lines = Self.screen(try Self.sample(Self.cluster))
        #expect(lines[0].contains(" · node n1 · up 1m01s"), "\(lines[0])")
        let index = try #require(lines.firstIndex { $0.hasPrefix("CLUSTER") }, "\(lines.joined(separator: "\n"))")
        #expect(lines[index].split(separator: " ") == ["CLUSTER", "up", "nats", "2", "reconnects", "3", "owned"], "\(lines[index])")
        #expect(lines[index + 1].trimmingCharacters(in: .whitespaces) == "nats://10.0.0.1:4222 · ack retries 5")
        #expect(lines[index - 1].hasPrefix("TICKS") && lines[index + 2].hasPrefix("PROCESS"), "between the store's readings and the process")
    }

    @Test("cluster mode with the link down: DOWN, and a line naming the server and for how long")
    func clusterLinkDown() throws {
        let down = Self.cluster.replacingOccurrences(of: #""connected": true"#, with: #""connected": false, "down_since": "2026-11-27T20:41:03Z", "down_s": 12"#)
        let lines = Self.screen(try Self.sample(down))
        let index = try #require(lines.firstIndex { $0.hasPrefix("CLUSTER") }, "\(lines.joined(separator: "\n"))")
        #expect(lines[index].split(separator: " ").prefix(3) == ["CLUSTER", "DOWN", "nats"], "\(lines[index])")
        #expect(lines[index + 1].trimmingCharacters(in: .whitespaces)
            == "NATS link to nats://10.0.0.1:4222 down for 12 s: commands fail until it is back", "\(lines[index + 1])")
    }

    @Test("a single server: no node in the header, no CLUSTER row; --json passes cluster through only when present")
    func singleServer() throws {
        let lines = Self.screen(try Self.sample(Self.late))
        #expect(!lines[0].contains("node") && !lines.contains { $0.hasPrefix("CLUSTER") || $0.contains("NATS") },
                "\(lines.joined(separator: "\n"))")
        let previous = try Self.sample(#"{"uptime_s": 60}"#)
        var single = try Self.sample(Self.late)
        single.atMs = 2_000
        #expect(!TopLines.json(try #require(TopRates(from: previous, to: single))).contains("cluster"))
        var clustered = try Self.sample(Self.cluster)
        clustered.atMs = 2_000
        #expect(TopLines.json(try #require(TopRates(from: previous, to: clustered))).contains(#""node":"n1""#))
    }
}
