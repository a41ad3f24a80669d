import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// Times that continue across stop and start, lap statistics, ticks and
/// live snapshots, all with the clock pinned.
@Suite struct LapTimingTests {
    typealias F = LapFixtures

    /// The seed's jogger: two laps, a burger break, then a third lap.
    @Test func timesContinueAfterStopAndStart() throws {
        var (state, _) = try F.run([("start", 0), ("lap", 90_000), ("lap", 185_000), ("stop", 200_000)])
        #expect(state.status == .paused)
        #expect(state.lapNumber == 3)
        #expect(state.lapElapsedMS == 15_000)
        #expect(state.totalElapsedMS == 200_000)
        // Ten minutes of burger: nothing moves while paused.
        #expect(state.snapshot(at: F.at(800_000)) == state.snapshot(at: F.at(200_000)))
        #expect(state.tick(at: F.at(800_000)) == nil)

        (state, _) = try F.run([("start", 800_000)], from: state)
        #expect(state.lapNumber == 3)
        #expect(state.lapElapsedMS(at: F.at(810_000)) == 25_000)
        #expect(state.totalElapsedMS(at: F.at(810_000)) == 210_000)

        (state, _) = try F.run([("lap", 830_000)], from: state)
        #expect(state.laps == [Lap(lap: 1, timeMS: 90_000), Lap(lap: 2, timeMS: 95_000), Lap(lap: 3, timeMS: 45_000)])
        #expect(state.averageLapMS == 76_667)  // 230,000 / 3 = 76,666.7
        #expect(state.bestLapMS == 45_000)
        #expect(state.worstLapMS == 95_000)
        #expect(state.lapNumber == 4)
        #expect(state.totalElapsedMS(at: F.at(830_000)) == 230_000)
        #expect(state.lapElapsedMS(at: F.at(831_500)) == 1_500)
    }

    /// Lap times (ms) → average (rounded to the nearest ms, halves up), best, worst.
    static let statistics: [(laps: [Int], average: Int, best: Int, worst: Int)] = [
        ([90_000], 90_000, 90_000, 90_000),
        ([90_000, 95_000], 92_500, 90_000, 95_000),
        ([1, 2], 2, 1, 2),
        ([1, 1, 2], 1, 1, 2),
        ([1, 2, 2], 2, 1, 2),
        ([61_234, 59_876, 60_001, 75_432], 64_136, 59_876, 75_432),
        ([0, 100], 50, 0, 100),
    ]

    @Test("average, best and worst over completed laps", arguments: statistics)
    func lapStatistics(expected: (laps: [Int], average: Int, best: Int, worst: Int)) throws {
        var steps = [("start", 0)]
        var clock = 0
        for time in expected.laps {
            clock += time
            steps.append(("lap", clock))
        }
        let (state, events) = try F.run(steps)
        #expect(state.laps.map(\.timeMS) == expected.laps)
        #expect(state.laps.map(\.lap) == Array(1...expected.laps.count))
        #expect(state.averageLapMS == expected.average)
        #expect(state.bestLapMS == expected.best)
        #expect(state.worstLapMS == expected.worst)
        guard case .object(let last) = events.last?.data else {
            Issue.record("no lap_completed event")
            return
        }
        #expect(last["average_lap_ms"] == F.int(expected.average))
    }

    @Test("no laps, no statistics", arguments: [["start"], ["start", "stop"], ["start", "lap", "stop", "reset"]])
    func noStatistics(actions: [String]) throws {
        let (state, _) = try F.run(actions.enumerated().map { ($0.element, $0.offset * 1_000) })
        #expect(state.averageLapMS == nil && state.bestLapMS == nil && state.worstLapMS == nil)
        guard case .object(let json) = state.snapshot(at: F.at(9_000)) else { return }
        #expect(json["average_lap_ms"] == .null)
        #expect(json["best_lap_ms"] == .null)
        #expect(json["worst_lap_ms"] == .null)
    }

    /// (state, ms after T0, expected tick); F.running started at T0 with 1.25 s / 181.25 s.
    static let ticks: [(state: LapSessionState, ms: Int, tick: JSONValue?)] = [
        (F.running, 0, F.tick(3, 1_250, 181_250)),
        (F.running, 100, F.tick(3, 1_350, 181_350)),
        (F.running, 60_001, F.tick(3, 61_251, 241_251)),
        (F.running, -500, F.tick(3, 1_250, 181_250)),
        (F.paused, 100, nil),
        (.initial, 100, nil),
    ]

    @Test("a tick while running, none otherwise", arguments: ticks)
    func tick(expected: (state: LapSessionState, ms: Int, tick: JSONValue?)) {
        #expect(expected.state.tick(at: F.at(expected.ms)) == expected.tick)
    }

    /// Live values at 1.234 s after a start at T0, and `elapsed_as_of` moved there.
    @Test func snapshotCarriesLiveValues() {
        let snapshot = F.running.snapshot(at: F.at(1_234))
        var expected = ChannelState.laps(F.running).json()
        if case .object(var fields) = expected {
            fields["lap_elapsed_ms"] = F.int(2_484)
            fields["total_elapsed_ms"] = F.int(182_484)
            fields["elapsed_as_of"] = .string("2026-11-22T08:00:01.234Z")
            expected = .object(fields)
        }
        #expect(snapshot == expected)
        // running_since stays the moment of the start.
        guard case .object(let fields) = snapshot else { return }
        #expect(fields["running_since"] == .string("2026-11-22T08:00:00.000Z"))
    }

    /// Paused and idle snapshots have exactly domain.md's keys, at any time.
    @Test("a stopped stopwatch's snapshot does not move", arguments: [F.paused, LapSessionState.initial])
    func stillSnapshot(state: LapSessionState) {
        let snapshot = state.snapshot(at: F.at(3_600_000))
        #expect(snapshot == ChannelState.laps(state).json())
        guard case .object(let fields) = snapshot else { return }
        #expect(fields["elapsed_as_of"] == nil)
        #expect(fields.count == 9)
    }

    /// Moments are rounded to the nearest millisecond and written with three
    /// digits, before 1970 too and without binary-fraction truncation.
    @Test("millisecond moments", arguments: [
        ("2026-11-22T08:00:00.123Z", "2026-11-22T08:00:00.123Z"),
        ("2026-11-22T08:00:00.999Z", "2026-11-22T08:00:00.999Z"),
        ("2026-11-22T08:00:00Z", "2026-11-22T08:00:00.000Z"),
        ("2026-11-22T09:00:00.5+01:00", "2026-11-22T08:00:00.500Z"),
        ("1969-12-31T23:59:58.5Z", "1969-12-31T23:59:58.500Z"),
        ("1955-11-12T22:04:00.001Z", "1955-11-12T22:04:00.001Z"),
    ])
    func millisecondMoments(given: String, written: String) throws {
        var state = LapSessionState.initial
        _ = try state.perform("start", ActionArgs(), ActionContext(now: ISOTime.parse(given)!))
        #expect(state.runningSince == written)
    }

    @Test("sub-millisecond clock readings round to the nearest millisecond", arguments: [
        (0.0004, 0), (0.0006, 1), (1.2344, 1_234), (1.2346, 1_235),
    ])
    func subMillisecond(seconds: Double, ms: Int) {
        let state = LapSessionState(status: .running, lapNumber: 1, runningSince: F.iso(0), elapsedAsOf: F.iso(0))
        #expect(state.totalElapsedMS(at: F.t0.addingTimeInterval(seconds)) == ms)
    }

    /// total = completed laps + current lap, at every moment of a long session.
    @Test func lapsAddUpToTheTotal() throws {
        var steps: [(String, Int)] = [("start", 0)]
        for index in 1...50 {
            steps.append((index % 7 == 0 ? "stop" : "lap", index * 1_003 + index % 3))
            if index % 7 == 0 { steps.append(("start", index * 1_003 + 500)) }
        }
        let (state, _) = try F.run(steps)
        for ms in stride(from: 50_000, through: 60_000, by: 777) {
            let sum = state.laps.map(\.timeMS).reduce(0, +)
            #expect(state.totalElapsedMS(at: F.at(ms)) == sum + state.lapElapsedMS(at: F.at(ms)))
        }
    }
}
