import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import OutaTimeTestKit
import Testing

/// A board rebuilt as a restarted server will rebuild it (an older stored
/// state plus the later events at their whole-second `at`) is the live
/// board, exactly: every event carries whole dispatches or absolute
/// statuses and times, and `apply` reads no clock.
@Suite struct StarportReplayFidelityTests {
    typealias F = StarportFixture

    /// A random run: clock moves, the scheduler's `advance`, then a
    /// `dispatch` or `cancel`, every change committed.
    static func run(seed: UInt64, steps: Int = 120) throws -> ReplayLog {
        var random = SeededGenerator(seed: seed)
        let clock = ManualClock(F.morning.addingTimeInterval(0.4))
        var live = StarportState.initial
        var log = ReplayLog(initial: .starport(live), storeEvery: Int.random(in: 1...8, using: &random))
        for _ in 0..<steps {
            clock.advance(by: random.step(maxMS: 1_500_000))
            let now = clock.now
            try log.commit(live.advance(to: now), live: .starport(live), at: now)
            let (action, args) = StarportIndexTests.randomCommand(on: live, now: now, using: &random)
            if let outcome = try? live.perform(action, ActionArgs(args), F.context(now)) {
                try log.commit(outcome.events, live: .starport(live), at: now)
            }
        }
        return log
    }

    @Test("replayed from an older stored state = live", arguments: [31, 32, 33] as [UInt64])
    func replayMatchesLive(seed: UInt64) throws {
        let log = try Self.run(seed: seed)
        try log.expectExactReplays(seed: seed, later: [0, 3_600])
        // The rebuilt board's schedule (its heap of departures and arrivals)
        // is the live one's too.
        for (source, target) in log.replayPairs {
            guard case .starport(let board) = try log.replay(from: source, to: target),
                  case .starport(let liveBoard) = log.commits[target].live else { continue }
            #expect(board.nextStatusChange() == liveBoard.nextStatusChange(), "seed \(seed), commit \(target)")
        }
        #expect(log.events.contains { $0.event.name == "status_changed" })
        #expect(log.events.contains { $0.event.name == "cancelled" })
    }
}
