import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import OutaTimeTestKit
import Testing

/// A stopwatch rebuilt as a restarted server rebuilds it (an older stored
/// state plus the later events at their whole-second `at`) is the live one,
/// exactly, now and later: the events carry millisecond moments and
/// absolute times, and `apply` reads no clock.
@Suite struct LapReplayFidelityTests {
    typealias F = LapFixtures

    /// A random run of `start`, `stop`, `lap` and `reset` (many refused as
    /// conflicts) at random milliseconds.
    static func run(seed: UInt64, steps: Int = 300) throws -> ReplayLog {
        var random = SeededGenerator(seed: seed)
        let clock = ManualClock(F.t0.addingTimeInterval(0.123))
        var live = LapSessionState.initial
        var log = ReplayLog(initial: .laps(live), storeEvery: Int.random(in: 1...8, using: &random))
        let actions = ["start", "start", "stop", "lap", "lap", "lap", "reset"]
        for _ in 0..<steps {
            clock.advance(by: random.step(maxMS: 90_000))
            let now = clock.now
            let action = actions.randomElement(using: &random)!
            if let outcome = try? live.perform(action, ActionArgs(), ActionContext(now: now)) {
                try log.commit(outcome.events, live: .laps(live), at: now)
            }
        }
        return log
    }

    @Test("replayed from an older stored state = live", arguments: [51, 52, 53] as [UInt64])
    func replayMatchesLive(seed: UInt64) throws {
        let log = try Self.run(seed: seed)
        try log.expectExactReplays(seed: seed, later: [0, 0.001, 0.5, 61.25, 3_600])
        #expect(Set(log.events.map(\.event.name)) == ["started", "stopped", "lap_completed", "reset"])
    }
}
