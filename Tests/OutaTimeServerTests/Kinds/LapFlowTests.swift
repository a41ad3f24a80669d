import OutaTimeTestSupport
import Foundation
import OutaTimeProtocol
import OutaTimeServer
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `laps/<session>` over TCP: start/lap/stop/reset rules, ticks, times that
/// continue after a stop, and the lap statistics (domain.md, "laps/<session>").
@Suite("lap flow", .timeLimit(.minutes(3)))
struct LapFlowTests {
    static let channel = "laps/track_2"

    /// 20 ms lap ticks.
    static func fastTicks(_ config: inout ServerConfig) { config.lapTickMs = 20 }

    /// A tick's `total_elapsed_ms`.
    static func total(_ tick: [String: Any]) -> Int { tick.data?[int: "total_elapsed_ms"] ?? -1 }

    @Test("start, rising ticks, lap, stop, start again from where it was; reset needs a stop")
    func startLapStop() throws {
        try withTestServer(Self.fastTicks) { server in
            let channel = Self.channel
            let client = try server.connectReady()
            try client.subscribe(channel)
            client.pushes.removeAll()
            try client.perform(channel, "start")
            #expect(client.pushes.contains { $0.isEvent("started", on: channel) },
                    "the issuer's started event arrives before its reply: \(describe(client.transcript))")
            #expect(try client.failure(channel, "start") == .conflict, "start while running")

            var ticks: [[String: Any]] = []
            for _ in 0..<6 { ticks.append(try client.awaitTick(on: channel, timeout: 2)) }
            let stats = try client.call("stats")
            #expect((stats["ticks"] as? Int ?? 0) >= 6, "stats counts the ticks built: \(stats)")
            #expect(stats["ticks_late"] is Int && stats["tick_lateness_max_ms"] is Int, "\(stats)")
            let totals = ticks.map(Self.total)
            #expect(zip(totals, totals.dropFirst()).allSatisfy { $0 < $1 }, "total_elapsed_ms rises: \(totals)")
            #expect(totals.allSatisfy { $0 >= 0 }, "\(describe(ticks))")
            #expect(ticks.allSatisfy { $0.data?[int: "lap_number"] == 1 }, "\(describe(ticks))")

            try client.perform(channel, "lap")
            let lap = try #require(client.awaitEvent("lap_completed", on: channel).data)
            #expect(lap[int: "lap"] == 1)
            let lapTime = try #require(lap[int: "time_ms"], "\(lap)")
            #expect(lapTime > 0)
            #expect(lap[int: "average_lap_ms"] == lapTime, "the average of one lap is that lap")
            #expect(try client.failure(channel, "reset") == .conflict, "reset while running")
            _ = try client.awaitTick(on: channel, timeout: 2) { $0[int: "lap_number"] == 2 }

            try client.perform(channel, "stop")
            #expect(client.pushes.contains { $0.isEvent("stopped", on: channel) }, "\(describe(client.transcript))")
            // Ticks sent before the stop was handled precede its reply; none may follow.
            client.pushes.removeAll()
            let paused = try client.state(channel)
            #expect(paused["status"] as? String == "paused")
            #expect(paused[int: "lap_number"] == 2)
            #expect(paused[objects: "laps"]?.count == 1)
            let pausedTotal = try #require(paused[int: "total_elapsed_ms"])
            #expect(pausedTotal >= lapTime)
            #expect(try client.failure(channel, "stop") == .conflict, "stop while paused")
            #expect(try client.failure(channel, "lap") == .conflict, "lap while paused")

            let quiet = try client.drain(for: 0.6)
            #expect(!quiet.contains { $0.isTick(on: channel) }, "ticks while paused: \(describe(quiet))")
            #expect(try client.state(channel)[int: "total_elapsed_ms"] == pausedTotal, "a paused stopwatch is frozen")

            try client.perform(channel, "start")
            _ = try client.awaitEvent("started", on: channel)
            let resumed = try client.state(channel)
            #expect(resumed["status"] as? String == "running")
            #expect(resumed[int: "lap_number"] == 2, "start after a stop keeps the lap number")
            let resumedTotal = try #require(resumed[int: "total_elapsed_ms"])
            #expect(resumedTotal >= pausedTotal && resumedTotal < pausedTotal + 500,
                    "the 0.6 s pause must not count: \(pausedTotal) → \(resumedTotal)")
            let next = try client.awaitTick(on: channel, timeout: 2)
            #expect(Self.total(next) >= pausedTotal, "\(describe([next]))")
        }
    }

    @Test("average_lap_ms after two laps is the rounded mean; stop then reset clears everything")
    func averageAndReset() throws {
        try withTestServer(Self.fastTicks) { server in
            let channel = Self.channel
            let client = try server.connectReady()
            try client.subscribe(channel)
            try client.perform(channel, "start")
            _ = try client.awaitTick(on: channel, timeout: 2) { $0[int: "lap_elapsed_ms"] ?? 0 >= 40 }
            try client.perform(channel, "lap")
            _ = try client.awaitTick(on: channel, timeout: 2) {
                $0[int: "lap_number"] == 2 && $0[int: "lap_elapsed_ms"] ?? 0 >= 80
            }
            try client.perform(channel, "lap")
            let first = try #require(client.awaitEvent("lap_completed", on: channel).data)
            let second = try #require(client.awaitEvent("lap_completed", on: channel).data)
            #expect(first[int: "lap"] == 1 && second[int: "lap"] == 2)
            let times = [first[int: "time_ms"] ?? -1, second[int: "time_ms"] ?? -1]
            #expect(times.allSatisfy { $0 > 0 }, "\(times)")
            let mean = Double(times[0] + times[1]) / 2
            let eventAverage = try #require(second[int: "average_lap_ms"], "\(second)")
            #expect(abs(Double(eventAverage) - mean) <= 0.5, "average \(eventAverage) of \(times)")

            try client.perform(channel, "stop")
            let stopped = try client.state(channel)
            let laps = stopped[objects: "laps"] ?? []
            #expect(laps.map { $0[int: "lap"] ?? -1 } == [1, 2])
            #expect(laps.map { $0[int: "time_ms"] ?? -1 } == times)
            #expect(stopped[int: "average_lap_ms"] == eventAverage)
            #expect(stopped[int: "best_lap_ms"] == times.min())
            #expect(stopped[int: "worst_lap_ms"] == times.max())
            #expect(stopped[int: "lap_number"] == 3)

            client.pushes.removeAll()
            try client.perform(channel, "reset")
            #expect(client.pushes.contains { $0.isEvent("reset", on: channel) }, "\(describe(client.transcript))")
            let zero = try client.state(channel)
            #expect(zero["status"] as? String == "idle")
            for key in ["lap_number", "lap_elapsed_ms", "total_elapsed_ms"] {
                #expect(zero[int: key] == 0, "\(key) after reset: \(describe([zero]))")
            }
            #expect(zero[objects: "laps"]?.isEmpty == true)
            for key in ["average_lap_ms", "best_lap_ms", "worst_lap_ms", "running_since"] {
                #expect(zero[key] is NSNull, "\(key) after reset: \(describe([zero]))")
            }
        }
    }

    @Test("watchers closing without reading while 1 ms ticks flow do not bring the server down")
    func closeWhileTicking() throws {
        try withTestServer({ $0.lapTickMs = 1 }) { server in
            let owner = try server.connectReady()
            try owner.subscribe(Self.channel)
            try owner.perform(Self.channel, "start")
            for round in 0..<100 {
                let client = try server.connectReady()
                try client.subscribe(Self.channel)
                usleep(UInt32(1_000 * (round % 5)))
                if round.isMultiple(of: 2) { client.closeAbruptly() } else { client.closeCleanly() }
            }
            #expect(try owner.request("ping").isOK)
            #expect(try owner.state(Self.channel)["status"] as? String == "running")
        }
    }

    @Test("lap and stop on an idle stopwatch are conflicts; nothing is stored")
    func idleConflicts() throws {
        try withTestServer(Self.fastTicks) { server in
            let client = try server.connectReady()
            try client.subscribe(Self.channel)
            #expect(try client.failure(Self.channel, "lap") == .conflict)
            #expect(try client.failure(Self.channel, "stop") == .conflict)
            #expect(try client.failure(Self.channel, "sprint") == .unknownAction)
            #expect(try client.call("get", ["channel": Self.channel])[int: "seq"] == 0)
        }
    }
}
