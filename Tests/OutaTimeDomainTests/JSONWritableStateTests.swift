import Foundation
@testable import OutaTimeDomain
import OutaTimeProtocol
import OutaTimeTestKit
import Testing

/// The domain's directly written types against their `Codable` conformances.
@Suite("JSONWritable domain types")
struct JSONWritableStateTests {
    static let lapStates: [LapSessionState] = [
        .initial,
        LapSessionState(status: .running, lapNumber: 3, lapElapsedMS: 1_250, totalElapsedMS: 125_250,
                        laps: [Lap(lap: 1, timeMS: 61_000), Lap(lap: 2, timeMS: 63_000)],
                        averageLapMS: 62_000, bestLapMS: 61_000, worstLapMS: 63_000,
                        runningSince: "2026-11-22T08:00:00.000Z", elapsedAsOf: "2026-11-22T08:02:04.000Z"),
        LapSessionState(status: .paused, lapNumber: 1, lapElapsedMS: 5, totalElapsedMS: 5),
    ]

    @Test("lap states, with and without laps, statistics and measuring point", arguments: lapStates)
    func lapState(_ state: LapSessionState) throws {
        try expectSameJSONBothWays(state)
        try expectSameJSONBothWays(ReplyOK(id: .int(7), result: state))
    }

    @Test("timer lists as stored: empty, mixed, running, with and without next_id")
    func timerLists() throws {
        var list = try TimerFixture.mixedList()
        try expectSameJSONBothWays(list)
        _ = try list.perform("start", TimerFixture.args(["id": TimerFixture.int(1)]),
                             TimerFixture.context(1, session: "bob"))
        try expectSameJSONBothWays(list)
        try expectSameJSONBothWays(list.checkpoint(at: TimerFixture.at(7)))
        try expectSameJSONBothWays(TimerListState.initial)
        try expectSameJSONBothWays(TimerListState(timers: list.timers, nextID: 500))
        for timer in list.timers { try expectSameJSONBothWays(timer) }
    }

    @Test("a timer list's tick, with running countdowns and empty")
    func timersTick() throws {
        var list = try TimerFixture.mixedList()
        _ = try list.perform("start", TimerFixture.args(["id": TimerFixture.int(1)]),
                             TimerFixture.context(1, session: "bob"))
        let tick = try #require(list.tickData(at: TimerFixture.at(3)))
        #expect(!tick.timers.isEmpty)
        try expectSameJSONBothWays(tick)
        try expectSameJSONBothWays(TickPush(channel: "timers/a", data: tick))
        try expectSameJSONBothWays(TimersTick(timers: [], at: "2026-11-22T08:00:01.000Z"))
    }
}
