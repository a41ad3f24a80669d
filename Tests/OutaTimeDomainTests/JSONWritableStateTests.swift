import Foundation
@testable import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// Encodes through `encode(to:)` even when the value is `JSONWritable`.
private struct ViaCodable<Value: Encodable & Sendable>: Encodable, Sendable {
    let value: Value
    func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
}

/// The domain's directly written types against their `Codable` conformances.
@Suite("JSONWritable domain types")
struct JSONWritableStateTests {
    private func expectSameBytes(_ value: some JSONWritable & Sendable, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let direct = String(decoding: try CompactJSONEncoder().encode(value), as: UTF8.self)
        let codable = String(decoding: try CompactJSONEncoder().encode(ViaCodable(value: value)), as: UTF8.self)
        #expect(direct == codable, sourceLocation: sourceLocation)
        let reference = try JSONValue.parse(try JSONEncoder().encode(value))
        #expect(try JSONValue.parse(Data(direct.utf8)) == reference, sourceLocation: sourceLocation)
    }

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
        try expectSameBytes(state)
        try expectSameBytes(ReplyOK(id: .int(7), result: state))
    }

    @Test("a timer list's tick, with running countdowns and empty")
    func timersTick() throws {
        var list = try TimerFixture.mixedList()
        _ = try list.perform("start", TimerFixture.args(["id": TimerFixture.int(1)]),
                             TimerFixture.context(1, session: "bob"))
        let tick = try #require(list.tickData(at: TimerFixture.at(3)))
        #expect(!tick.timers.isEmpty)
        try expectSameBytes(tick)
        try expectSameBytes(TickPush(channel: "timers/a", data: tick))
        try expectSameBytes(TimersTick(timers: [], at: "2026-11-22T08:00:01.000Z"))
    }
}
