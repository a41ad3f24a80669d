import Foundation
@testable import OutaTimeDomain
import OutaTimeProtocol
import OutaTimeTestKit
import Testing

/// The runtime indexes of a timer list (issue 12) answer exactly what a pass
/// over every timer answered: checked against such passes after every step
/// of random runs, and through decoding, replacing `timers` and equality.
@Suite struct TimerIndexTests {
    typealias F = TimerFixture

    /// What a pass over the timers says; the indexes must say the same.
    static func expectMatchesScan(_ list: TimerListState, _ comment: String,
                                  sourceLocation: SourceLocation = #_sourceLocation) {
        let running = list.timers.filter { $0.status == .running }
        #expect(list.nextFinish() == running.compactMap(\.deadline).min(), "\(comment)", sourceLocation: sourceLocation)
        #expect(list.earliestRunningSince == running.compactMap(\.countdown?.since).min(), "\(comment)",
                sourceLocation: sourceLocation)
        for (position, timer) in list.timers.enumerated() {
            #expect(list.index(of: timer.id) == position, "\(comment)", sourceLocation: sourceLocation)
        }
        #expect(list.positions.count == list.timers.count, "\(comment)", sourceLocation: sourceLocation)
        // Stale entries stay within twice the valid ones plus the slack.
        #expect(list.deadlines.count <= 2 * running.count + 64, "\(comment)", sourceLocation: sourceLocation)
        #expect(list.starts.count <= 2 * running.count + 64, "\(comment)", sourceLocation: sourceLocation)
    }

    /// `advance(to:)` as a scan: every due timer, by deadline then id.
    static func scannedAdvance(_ list: TimerListState, to now: Date) -> [DomainEvent] {
        list.timers
            .compactMap { timer -> (Date, Int)? in
                guard timer.status == .running, let deadline = timer.deadline, deadline <= now else { return nil }
                return (deadline, timer.id)
            }
            .sorted { $0 < $1 }
            .map { TimerEvent.finished(id: $0.1).domainEvent }
    }

    /// `release(session:)` as a scan: the running timers `session` alone
    /// views, in list order.
    static func scannedRelease(_ list: TimerListState, session: String, at now: Date) -> [DomainEvent] {
        list.timers
            .filter { $0.viewerSessions == [session] && $0.status == .running }
            .map { TimerListState.paused($0, at: now).domainEvent }
    }

    @Test("indexes = scans over random runs", arguments: [11, 12, 13, 14] as [UInt64])
    func randomRun(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let clock = ManualClock(F.t0)
        var list = TimerListState.initial
        var finished = 0, released = 0
        for step in 0..<600 {
            clock.advance(by: random.step(maxMS: 1_500))
            let now = clock.now
            let expected = Self.scannedAdvance(list, to: now)
            let events = list.advance(to: now)
            #expect(events == expected, "seed \(seed) step \(step): advance")
            finished += events.count
            let session = TimerReplayFidelityTests.sessions.randomElement(using: &random)!
            if Int.random(in: 0..<100, using: &random) < 8 {
                let expected = Self.scannedRelease(list, session: session, at: now)
                #expect(list.release(session: session, at: now) == expected, "seed \(seed) step \(step): release")
                released += expected.count
            } else {
                let (action, args) = TimerReplayFidelityTests.randomCommand(on: list, now: now, using: &random)
                _ = try? list.perform(action, ActionArgs(args), ActionContext(now: now, session: session, actor: "Doc"))
            }
            Self.expectMatchesScan(list, "seed \(seed) step \(step)")
        }
        #expect(finished > 0 && released > 0)
    }

    @Test func stoppingAndStartingAgainKeepsTheHeapsSmall() throws {
        var list = TimerListState.initial
        _ = try list.perform("add", F.args(["event": .string("E"), "remaining_s": F.int(1_000)]), F.context())
        _ = try list.perform("add", F.args(["event": .string("Soon"), "remaining_s": F.int(10)]), F.context())
        // Timer 2's deadline stays on top, so timer 1's old entries go stale
        // below it and only the clean-ups remove them.
        _ = try list.perform("start", F.args(["id": F.int(2)]), F.context())
        for tenth in 0..<5_000 {
            _ = try list.perform("start", F.args(["id": F.int(1)]), F.context(Double(tenth) / 10))
            _ = try list.perform("stop", F.args(["id": F.int(1)]), F.context(Double(tenth) / 10 + 0.05))
        }
        _ = try list.perform("start", F.args(["id": F.int(1)]), F.context(600))
        Self.expectMatchesScan(list, "after 5,000 start/stop pairs")
        #expect(list.deadlines.count <= 2 * 2 + 64 && list.starts.count <= 2 * 2 + 64)
    }

    @Test func theHeapsShrinkWhenMostCountdownsStop() throws {
        var list = TimerListState.initial
        for number in 1...300 {
            _ = try list.perform("add", F.args(["event": .string("T\(number)"), "remaining_s": F.int(1_000 - number)]), F.context())
            _ = try list.perform("start", F.args(["id": F.int(number)]), F.context(0.5))
        }
        // The earliest deadlines stay: the stale entries are not at the top.
        for id in 1...299 {
            _ = try list.perform("stop", F.args(["id": F.int(id)]), F.context(1))
        }
        Self.expectMatchesScan(list, "one of 300 left running")
        #expect(list.nextFinish() == F.at(700.5))
    }

    @Test func decodingRebuildsTheIndexes() throws {
        var live = try F.mixedList()
        _ = try live.perform("start", F.args(["id": F.int(1)]), F.context(2, session: "bob"))
        var decoded = try F.decode(live.snapshot(at: F.at(10)))
        Self.expectMatchesScan(decoded, "decoded")
        #expect(decoded.nextFinish() == nil, "a decoded running timer has no base until resumed")
        decoded.resumeCountdowns(storedAt: F.at(10))
        Self.expectMatchesScan(decoded, "resumed")
        _ = try decoded.perform("update", F.args(["id": F.int(3), "event": .string("Found")]), F.context(11))
        #expect(decoded.timers[2].event == "Found")
    }

    @Test func settingTimersRebuildsTheIndexes() throws {
        var list = try F.mixedList()
        list.timers[0].status = .running
        list.timers[0].countdown = .init(since: F.at(5), remainingS: 7)
        list.timers.swapAt(0, 2)
        Self.expectMatchesScan(list, "after edits through `timers`")
        #expect(list.nextFinish() == F.at(12))
        #expect(list.advance(to: F.at(12)) == [TimerEvent.finished(id: 1).domainEvent])
    }

    @Test func equalityIgnoresTheIndexes() throws {
        // The same list reached twice, once with stale heap entries below the
        // top (timer 2's deadline, 300 s, is earlier than timer 1's 600 s).
        let plain = try F.mixedList()
        var churned = try F.mixedList()
        for _ in 1...50 {
            _ = try churned.perform("start", F.args(["id": F.int(1)]), F.context(0, session: "bob"))
            _ = try churned.perform("stop", F.args(["id": F.int(1)]), F.context(0, session: "bob"))
        }
        #expect(churned.deadlines.count > plain.deadlines.count, "the churned heap holds stale entries")
        #expect(churned == plain)
        #expect(ChannelState.timers(churned).jsonText() == ChannelState.timers(plain).jsonText())
        Self.expectMatchesScan(churned, "churned")
    }

    @Test func aRepeatedIdFromElsewhereFindsTheFirstAndRemovesAll() throws {
        var list = TimerListState(timers: [
            CountdownTimer(id: 1, event: "A", location: "", remainingS: 5),
            CountdownTimer(id: 2, event: "B", location: "", remainingS: 5),
            CountdownTimer(id: 1, event: "C", location: "", remainingS: 5),
            CountdownTimer(id: 1, event: "D", location: "", remainingS: 5),
            CountdownTimer(id: 3, event: "E", location: "", remainingS: 5),
        ])
        #expect(list.index(of: 1) == 0)
        _ = try list.perform("update", F.args(["id": F.int(1), "location": .string("here")]), F.context())
        #expect(list.timers.map(\.location) == ["here", "", "", "", ""])
        _ = try list.perform("remove", F.args(["id": F.int(1)]), F.context())
        #expect(list.timers.map(\.event) == ["B", "E"])
        #expect(list.index(of: 2) == 0 && list.index(of: 3) == 1 && list.index(of: 1) == nil)
    }

    @Test func removeKeepsTheOrderAndThePositions() throws {
        var list = TimerListState.initial
        for number in 1...6 {
            _ = try list.perform("add", F.args(["event": .string("T\(number)"), "remaining_s": F.int(9)]), F.context())
        }
        for id in [3, 1, 6] {
            _ = try list.perform("remove", F.args(["id": F.int(id)]), F.context())
            Self.expectMatchesScan(list, "after removing \(id)")
        }
        #expect(list.timers.map(\.id) == [2, 4, 5])
        _ = try list.perform("add", F.args(["event": .string("T7"), "remaining_s": F.int(9)]), F.context())
        #expect(list.timers.map(\.id) == [2, 4, 5, 7])
        Self.expectMatchesScan(list, "after adding again")
    }
}
