import Foundation
@testable import OutaTimeDomain
import OutaTimeProtocol
import OutaTimeTestKit
import Testing

/// A list rebuilt the way a restarted server will rebuild it (an older
/// stored state, `resumeCountdowns(storedAt:)`, then the later events at
/// their whole-second `at`) shows clients what the live list showed, over
/// random runs of every command and of the clock.
///
/// Exact: ids, order, `next_id`, `event`, `location`, `status`, and every
/// value of a timer that is not running. Within 1: a running timer's
/// `remaining_s` (in snapshots, ticks and the stored form), because its
/// countdown is based on a whole second (see `TimerListState+Restart.swift`).
/// Presence: `viewers` is a count of sessions that events carry only at
/// the first arrival and the last departure, so a replayed running timer
/// shows at least 1 viewer and the live one its true count.
@Suite struct TimerReplayFidelityTests {
    typealias F = TimerFixture
    static let sessions = ["ann", "bob", "cy"]

    /// A random run of `steps` clock moves, each followed by the server's
    /// `advance` and one command or release, every change committed.
    static func run(seed: UInt64, steps: Int = 250) throws -> ReplayLog {
        var random = SeededGenerator(seed: seed)
        let clock = ManualClock(F.t0.addingTimeInterval(0.25))
        var live = TimerListState.initial
        var log = ReplayLog(initial: .timers(live), storeEvery: Int.random(in: 1...8, using: &random))
        for _ in 0..<steps {
            clock.advance(by: random.step(maxMS: 2_500))
            let now = clock.now
            try log.commit(live.advance(to: now), live: .timers(live), at: now)
            let session = sessions.randomElement(using: &random)!
            if Int.random(in: 0..<100, using: &random) < 6 {
                try log.commit(live.release(session: session, at: now), live: .timers(live), at: now)
                continue
            }
            let (action, args) = randomCommand(on: live, now: now, using: &random)
            if let outcome = try? live.perform(action, ActionArgs(args), ActionContext(now: now, session: session, actor: "Doc")) {
                try log.commit(outcome.events, live: .timers(live), at: now)
            }
        }
        return log
    }

    /// A command on an existing timer (sometimes a missing one), with
    /// arguments that are mostly valid.
    static func randomCommand(on list: TimerListState, now: Date,
                              using random: inout SeededGenerator) -> (String, [String: JSONValue]) {
        let ids = list.timers.map(\.id)
        let id = F.int(Int.random(in: 0..<10, using: &random) == 0 || ids.isEmpty
                       ? list.nextID : ids.randomElement(using: &random)!)
        let remaining = F.int(Int.random(in: 0...40, using: &random))
        switch Int.random(in: 0..<100, using: &random) {
        case 0..<15:
            if Bool.random(using: &random) {
                return ("add", ["event": .string("T\(list.nextID)"), "remaining_s": remaining])
            }
            let at = ISOTime.format(now.addingTimeInterval(Double(Int.random(in: -5...40, using: &random))))
            return ("add", ["event": .string("T\(list.nextID)"), "location": .string("L"), "at": .string(at)])
        case 15..<30:
            var args: [String: JSONValue] = ["id": id]
            if Bool.random(using: &random) { args["event"] = .string("E\(Int.random(in: 0..<9, using: &random))") }
            if Bool.random(using: &random) { args["location"] = .string("Hill Valley") }
            if args.count == 1 || Bool.random(using: &random) { args["remaining_s"] = remaining }
            return ("update", args)
        case 30..<35:
            return ("remove", ["id": id])
        case 35..<75:
            return ("start", ["id": id])
        default:
            return ("stop", ["id": id])
        }
    }

    /// Gives running timers of a decoded list their base back.
    static func resume(_ state: inout ChannelState, storedAt: Date) {
        guard case .timers(var list) = state else { return }
        list.resumeCountdowns(storedAt: storedAt)
        state = .timers(list)
    }

    static func list(_ state: ChannelState) throws -> TimerListState {
        guard case .timers(let list) = state else { throw F.DecodeFailure() }
        return list
    }

    @Test("replayed from an older stored state = live", arguments: [1, 2, 3, 4, 5, 6] as [UInt64])
    func replayMatchesLive(seed: UInt64) throws {
        let log = try Self.run(seed: seed)
        var resumed = 0, runningCompared = 0
        for (source, target) in log.replayPairs {
            let commit = log.commits[target]
            let live = try Self.list(commit.live)
            let replayed = try Self.list(try log.replay(from: source, to: target, prepare: Self.resume))
            if let source {
                resumed += try Self.list(ChannelState(kind: .timers, jsonText: log.commits[source].storedText!)).runningTimers.count
            }
            let context = "seed \(seed), stored at commit \(source.map(String.init) ?? "-"), replayed to \(target)"
            #expect(replayed.timers.map(\.status) == live.timers.map(\.status), "\(context)")
            runningCompared += live.runningTimers.count
            for later in [0, 0.4, 1, 2.7, 15] as [TimeInterval] {
                let now = commit.time.addingTimeInterval(later)
                Self.expectClose(replayed.snapshot(at: now), live.snapshot(at: now), exact: live.runningTimers.isEmpty,
                                 "\(context), snapshot at +\(later)")
                Self.expectCloseTicks(replayed.tickData(at: now), live.tickData(at: now), "\(context), tick at +\(later)")
            }
            // The stored form, written at the commit's own time.
            let stored = try JSONValue.parse(Data(ChannelState.timers(replayed).storedText(at: commit.time).utf8))
            let liveStored = try JSONValue.parse(Data(commit.live.storedText(at: commit.time).utf8))
            Self.expectClose(stored, liveStored, exact: live.runningTimers.isEmpty, "\(context), stored form")
            switch (replayed.nextFinish(), live.nextFinish()) {
            case (nil, nil): break
            case (let replayedFinish?, let liveFinish?):
                #expect(abs(replayedFinish.timeIntervalSince(liveFinish)) < 1, "\(context): next finish")
            default:
                Issue.record("\(context): next finish \(String(describing: replayed.nextFinish())) vs \(String(describing: live.nextFinish()))")
            }
        }
        // The run went through the cases that matter.
        #expect(resumed > 0, "some stored state had running timers to resume")
        #expect(runningCompared > 0)
        #expect(log.events.contains { $0.event.name == "timer_finished" })
        #expect(log.storedCommits.count > 1)
    }

    /// Two timer lists' JSON (snapshot or stored form): equal, or with
    /// running timers' `remaining_s` within 1 and their `viewers` both > 0.
    static func expectClose(_ replayed: JSONValue, _ live: JSONValue, exact: Bool, _ comment: String,
                            sourceLocation: SourceLocation = #_sourceLocation) {
        if exact {
            #expect(replayed == live, "\(comment)", sourceLocation: sourceLocation)
            return
        }
        guard case .object(var replayedTop) = replayed, case .object(var liveTop) = live,
              case .array(let replayedTimers)? = replayedTop.removeValue(forKey: "timers"),
              case .array(let liveTimers)? = liveTop.removeValue(forKey: "timers"),
              replayedTimers.count == liveTimers.count else {
            Issue.record("\(comment): not two lists of the same length", sourceLocation: sourceLocation)
            return
        }
        #expect(replayedTop == liveTop, "\(comment): next_id", sourceLocation: sourceLocation)
        for (replayedTimer, liveTimer) in zip(replayedTimers, liveTimers) {
            guard case .object(var a) = replayedTimer, case .object(var b) = liveTimer else { continue }
            if b["status"] == .string("running") {
                let remaining = (TimerJSON.int(a.removeValue(forKey: "remaining_s")) ?? -9,
                                 TimerJSON.int(b.removeValue(forKey: "remaining_s")) ?? -9)
                #expect(abs(remaining.0 - remaining.1) <= 1, "\(comment): \(replayedTimer) vs \(liveTimer)",
                        sourceLocation: sourceLocation)
                let viewers = (TimerJSON.int(a.removeValue(forKey: "viewers")) ?? 0,
                               TimerJSON.int(b.removeValue(forKey: "viewers")) ?? 0)
                #expect(viewers.0 > 0 && viewers.1 > 0, "\(comment): viewers of \(liveTimer)", sourceLocation: sourceLocation)
            }
            #expect(a == b, "\(comment): \(replayedTimer) vs \(liveTimer)", sourceLocation: sourceLocation)
        }
    }

    /// Two ticks: the same timers, in the same order, `remaining_s` within 1.
    static func expectCloseTicks(_ replayed: TimersTick?, _ live: TimersTick?, _ comment: String,
                                 sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(replayed?.timers.map(\.id) == live?.timers.map(\.id), "\(comment)", sourceLocation: sourceLocation)
        #expect(replayed?.at == live?.at, "\(comment)", sourceLocation: sourceLocation)
        for (a, b) in zip(replayed?.timers ?? [], live?.timers ?? []) {
            #expect(abs(a.remainingS - b.remainingS) <= 1, "\(comment): timer \(a.id)", sourceLocation: sourceLocation)
        }
    }

    @Test("alive-until recovery of a replayed list", arguments: [7, 8, 9, 10] as [UInt64])
    func aliveUntilAfterReplay(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let log = try Self.run(seed: seed, steps: 120)
        let last = log.commits.count - 1
        let live = try Self.list(log.commits[last].live)
        // The server went down a little after its last commit; it had said
        // "alive" up to a moment before that.
        let crash = log.commits[last].time.addingTimeInterval(random.step(maxMS: 4_000))
        let aliveUntil = crash.addingTimeInterval(-random.step(maxMS: 1_000))
        var replayed = try Self.list(try log.replay(from: log.latestStored(atOrBefore: last), to: last, prepare: Self.resume))
        let events = replayed.recoverAfterRestart(at: crash.addingTimeInterval(30), aliveUntil: aliveUntil)

        #expect(events.count == live.runningTimers.count)
        for (event, timer) in zip(events, live.runningTimers) {
            let data = TimerJSON.fields(event.data)
            #expect(TimerJSON.int(data["id"]) == timer.id)
            let expected = timer.remaining(at: aliveUntil)
            switch event.name {
            case "timer_stopped":
                let remaining = try #require(TimerJSON.int(data["remaining_s"]))
                #expect(remaining > 0 && abs(remaining - expected) <= 1, "seed \(seed): timer \(timer.id)")
            case "timer_finished":
                #expect(expected <= 1, "seed \(seed): timer \(timer.id)")
            default:
                Issue.record("unexpected \(event.name)")
            }
        }
        #expect(replayed.runningTimers.isEmpty && replayed.timers.allSatisfy { $0.viewers == 0 })
        #expect(replayed.nextFinish() == nil && replayed.earliestRunningSince == nil)
    }
}
