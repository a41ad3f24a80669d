import OutaTimeTestSupport
import Foundation
import OutaTimeProtocol
@testable import OutaTimeServer
import Testing

/// `stats`' `slowest_channels` (issue 14): the channels whose ticks ran
/// late recently, worst first, at most five, scoped like `list`. Lateness is
/// made, not hoped for: DeLorean trips tick every second and play every
/// missed tick, and the loop is kept busy for 1.2 s
/// (``ServerHandle/blockLoop(milliseconds:)``), so each trip's next tick,
/// due within that second, is built at least 200 ms late.
@Suite("slowest channels", .timeLimit(.minutes(3)))
struct SlowestChannelsTests {
    static let tickMs = 1000
    static let blockMs = 1200

    /// One-second acceleration ticks (a trip lasts 88 s, so it runs
    /// throughout the test) and a window that cannot expire mid-test.
    static func slowTicks(_ config: inout ServerConfig) {
        config.deloreanTickMs = tickMs
        config.slowChannelWindowMs = 3_600_000
    }

    /// Sets a destination and starts the trip on each channel.
    static func startTrips(_ channels: [String], by client: TestClient) throws {
        for channel in channels {
            try client.perform(channel, "set_destination", ["time": "1955-11-05T06:00:00Z"])
            try client.perform(channel, "travel")
        }
    }

    /// `slowest_channels` once the late ticks have been built: they are
    /// played in the loop iteration after the block, all in one scheduler
    /// wake-up, so the first non-empty reading holds every late channel.
    static func slowestAfterBlock(_ client: TestClient) throws -> [[String: Any]] {
        let deadline = Date().addingTimeInterval(30)
        while true {
            let stats = try client.call("stats")
            let slowest = try #require(stats[objects: "slowest_channels"], "stats: \(stats)")
            if !slowest.isEmpty || Date() > deadline { return slowest }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    @Test("a quiet server reports an empty slowest_channels, channels or not")
    func quietServer() throws {
        try withTestServer { server in
            let client = try server.connectReady(name: "Doc")
            #expect(try client.call("stats")[objects: "slowest_channels"]?.isEmpty == true)
            // Channels that do not tick: a starport, a list with a stopped timer.
            try client.call("get", ["channel": "starport/quiet"])
            try client.perform("timers/quiet", "add", ["event": "Clock tower", "remaining_s": 60])
            let stats = try client.call("stats")
            let slowest = try #require(stats[objects: "slowest_channels"], "present and an array: \(stats)")
            #expect(slowest.isEmpty, "\(slowest)")
            #expect(stats[int: "channels"] == 2)
        }
    }

    @Test("six late trips: five entries, worst first, each late; /metrics names none of them")
    func boundedWorstFirst() throws {
        try withTestServer(Self.slowTicks) { server in
            let client = try server.connectReady(name: "Doc")
            let cars = (1...6).map { "delorean/car-\($0)" }
            try Self.startTrips(cars, by: client)
            try #require(server.handle.blockLoop(milliseconds: Self.blockMs))

            let slowest = try Self.slowestAfterBlock(client)
            #expect(slowest.count == 5, "bounded to five (PROTOCOL.md §6.10) of the six late: \(slowest)")
            let names = slowest.compactMap { $0["channel"] as? String }
            #expect(names.count == slowest.count && Set(names).count == names.count && Set(names).isSubset(of: cars),
                    "\(names)")
            let lateness = slowest.map { $0[int: "tick_lateness_max_ms"] ?? -1 }
            #expect(lateness == lateness.sorted(by: >), "worst first: \(lateness)")
            for entry in slowest {
                #expect((entry[int: "tick_lateness_max_ms"] ?? 0) >= Self.blockMs - Self.tickMs, "\(entry)")
                #expect((entry[int: "ticks_late"] ?? 0) >= 1, "\(entry)")
                #expect(entry.count == 3, "channel, tick_lateness_max_ms, ticks_late only: \(entry)")
            }

            let text = try #require(try client.call("stats", ["format": "prometheus"])["text"] as? String)
            #expect(!text.contains("car-"), "no metric names a channel")
        }
    }

    @Test("a scoped admin token sees only its own channels in slowest_channels (a scoped watch token gets no stats)")
    func scoped() throws {
        let tokens = [
            AccessToken(token: "doc-1955", name: "Doc", role: .operate),
            AccessToken(token: "car-3-board", name: "Board", role: .admin,
                        scope: .only([.exact(try ChannelName.parse("delorean/car-3"))])),
        ]
        try withTestServer({ Self.slowTicks(&$0); $0.tokens = tokens }) { server in
            let doc = try server.connectReady(name: "Doc", token: "doc-1955")
            try Self.startTrips(["delorean/car-1", "delorean/car-2", "delorean/car-3"], by: doc)
            try #require(server.handle.blockLoop(milliseconds: Self.blockMs))

            #expect(try Self.slowestAfterBlock(doc).count == 3)
            let board = try server.connectReady(name: "Board", token: "car-3-board")
            let seen = try #require(try board.call("stats")[objects: "slowest_channels"])
            #expect(seen.map { $0["channel"] as? String } == ["delorean/car-3"], "\(seen)")
            #expect((seen.first?[int: "tick_lateness_max_ms"] ?? 0) >= Self.blockMs - Self.tickMs, "\(seen)")
        }
    }
}

/// The window each channel keeps (``TickLatenessWindow``), on explicit
/// monotonic times: no server, no clock.
@Suite("tick lateness window")
struct TickLatenessWindowTests {
    typealias Reading = TickLatenessWindow.Reading

    @Test("the worst lateness and the ticks over 50 ms, over this window and the one before")
    func currentAndPrevious() {
        var window = TickLatenessWindow()
        #expect(window.reading(at: 5_000, windowMs: 10_000) == Reading())
        window.record(latenessMs: 50, at: 10_000, windowMs: 10_000)   // 50 is not late
        window.record(latenessMs: 51, at: 12_000, windowMs: 10_000)
        window.record(latenessMs: 3, at: 19_999, windowMs: 10_000)
        #expect(window.reading(at: 19_999, windowMs: 10_000) == Reading(maxMs: 51, late: 1))
        // The next window: the previous one still counts.
        window.record(latenessMs: 200, at: 20_000, windowMs: 10_000)
        #expect(window.reading(at: 29_999, windowMs: 10_000) == Reading(maxMs: 200, late: 2))
        // One further: only the window of the 200 ms tick is left.
        #expect(window.reading(at: 30_000, windowMs: 10_000) == Reading(maxMs: 200, late: 1))
        window.record(latenessMs: 7, at: 31_000, windowMs: 10_000)
        #expect(window.reading(at: 31_000, windowMs: 10_000) == Reading(maxMs: 200, late: 1))
        // Two windows without a tick: nothing is left.
        #expect(window.reading(at: 50_000, windowMs: 10_000) == Reading())
        window.record(latenessMs: 0, at: 60_000, windowMs: 10_000)
        #expect(window.reading(at: 60_000, windowMs: 10_000) == Reading())
    }

    @Test("worst first: lateness, then late ticks, then the name")
    func ordering() {
        let entries = [
            SlowChannel(channel: "laps/b", tickLatenessMaxMs: 80, ticksLate: 1),
            SlowChannel(channel: "laps/a", tickLatenessMaxMs: 80, ticksLate: 1),
            SlowChannel(channel: "laps/c", tickLatenessMaxMs: 80, ticksLate: 4),
            SlowChannel(channel: "laps/d", tickLatenessMaxMs: 300, ticksLate: 1),
        ]
        let sorted = entries.sorted { $0.isWorse(than: $1) }
        #expect(sorted.map(\.channel) == ["laps/d", "laps/c", "laps/a", "laps/b"])
    }
}
