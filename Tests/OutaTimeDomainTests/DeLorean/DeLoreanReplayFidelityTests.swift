import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import OutaTimeTestKit
import Testing

/// A car rebuilt as a restarted server will rebuild it (an older stored
/// state plus the later events at their whole-second `at`) is the live car
/// at every commit, exactly: the events carry absolute times and `apply`
/// reads no clock. Between commits, only `speed_mph` moves (ticks are not
/// events, domain.md): a car rebuilt mid-trip shows 0 mph, and the restart
/// aborts the trip.
@Suite struct DeLoreanReplayFidelityTests {
    typealias F = DeLoreanFixtures

    /// A random run: clock moves, acceleration ticks while a trip is under
    /// way (the scheduler), then `set_destination` or `travel`.
    static func run(seed: UInt64, steps: Int = 300) throws -> (log: ReplayLog, live: DeLoreanState, end: Date) {
        var random = SeededGenerator(seed: seed)
        let clock = ManualClock(F.demoNight.addingTimeInterval(0.7))
        var live = DeLoreanState.initial(now: clock.now)
        var log = ReplayLog(initial: .delorean(live), storeEvery: Int.random(in: 1...6, using: &random))
        for _ in 0..<steps {
            clock.advance(by: random.step(maxMS: 3_000))
            let now = clock.now
            if live.isAccelerating {
                for _ in 0..<Int.random(in: 0...40, using: &random) where live.isAccelerating {
                    try log.commit(live.accelerate(at: now).events, live: .delorean(live), at: now)
                }
            }
            let command: (String, [String: JSONValue]) = Int.random(in: 0..<3, using: &random) == 0
                ? ("travel", [:])
                : ("set_destination", ["time": .string(ISOTime.format(F.demoNight.addingTimeInterval(
                    Double(Int.random(in: -2_000_000_000...2_000_000_000, using: &random)))))])
            if let outcome = try? live.perform(command.0, ActionArgs(command.1), ActionContext(now: now)) {
                try log.commit(outcome.events, live: .delorean(live), at: now)
            }
        }
        return (log, live, clock.now)
    }

    @Test("replayed from an older stored state = live", arguments: [41, 42, 43] as [UInt64])
    func replayMatchesLive(seed: UInt64) throws {
        let (log, live, end) = try Self.run(seed: seed)
        try log.expectExactReplays(seed: seed, later: [0])
        #expect(log.events.contains { $0.event.name == "time_travel" })

        // After the last commit only ticks happened: the rebuilt car differs
        // from the live one in speed alone, and only while accelerating.
        let last = log.commits.count - 1
        guard case .delorean(var rebuilt) = try log.replay(from: log.latestStored(atOrBefore: last), to: last) else {
            Issue.record("not a car")
            return
        }
        var expected = live
        if live.isAccelerating { expected.speedMPH = 0 }
        #expect(rebuilt == expected, "seed \(seed)")
        let aborted = rebuilt.recoverAfterRestart(at: end)
        #expect(aborted.map(\.name) == (live.isAccelerating ? ["acceleration_aborted"] : []))
    }
}
