import Synchronization

/// What one timers worker has seen so far, readable from the coordinating
/// thread (relaxed atomics: counters read for progress and at the end).
final class TimersTally: WorkerTally, @unchecked Sendable {
    /// Viewer connections subscribed to their list.
    let viewersReady = Atomic<Int>(0)
    /// `add` commands acknowledged.
    let added = Atomic<Int>(0)
    /// Watcher connections whose `hello` was answered.
    let watchersConnected = Atomic<Int>(0)
    /// Watcher connections subscribed to their list.
    let watchersSubscribed = Atomic<Int>(0)
    /// `start` commands acknowledged (timers running).
    let started = Atomic<Int>(0)
    /// Tick frames delivered to watchers while measuring.
    let ticks = Atomic<Int>(0)
    /// Timer entries (`tick.timers`) delivered to watchers while measuring.
    let updates = Atomic<Int>(0)
    /// Tick frames delivered to watchers, setup included (for stall detection).
    let ticksSeen = Atomic<Int>(0)
    /// Ticks checked while measuring: what the run's figures report.
    let measured = TickChecks()
    /// Ticks checked during the setup, while lists already started tick
    /// beside the adds and starts of the others: reported apart.
    let setup = TickChecks()
    /// Tick frames that arrived more than ``TimersTally/lateThresholdSeconds`` after their second.
    let lateTicks = Atomic<Int>(0)
    /// The lateness that counts a tick as late (the 50 ms of the benchmark goal).
    static let lateThresholdSeconds = 0.050

    /// Every counter, read once.
    var counts: TimersCounts {
        TimersCounts(
            viewersReady: viewersReady.load(ordering: .relaxed), added: added.load(ordering: .relaxed),
            watchersConnected: watchersConnected.load(ordering: .relaxed),
            watchersSubscribed: watchersSubscribed.load(ordering: .relaxed), started: started.load(ordering: .relaxed),
            ticks: ticks.load(ordering: .relaxed), updates: updates.load(ordering: .relaxed),
            ticksSeen: ticksSeen.load(ordering: .relaxed), measured: measured.counts, setup: setup.counts,
            lateTicks: lateTicks.load(ordering: .relaxed), errors: errors.load(ordering: .relaxed))
    }
}

/// What the consecutive ticks of each watcher showed that they should not:
/// one set of counters per phase.
final class TickChecks: Sendable {
    /// Tick frames a watcher never got: its list's reference countdown jumped by more than 1.
    let missedTicks = Atomic<Int>(0)
    /// Tick frames a watcher got twice: the reference countdown did not move.
    let duplicatedTicks = Atomic<Int>(0)
    /// Seconds a timer skipped between consecutive ticks (remaining_s fell by more than 1).
    let missedUpdates = Atomic<Int>(0)
    /// A timer showing the same remaining_s in consecutive ticks.
    let duplicatedUpdates = Atomic<Int>(0)

    var counts: TickCheckCounts {
        TickCheckCounts(missedTicks: missedTicks.load(ordering: .relaxed),
                        duplicatedTicks: duplicatedTicks.load(ordering: .relaxed),
                        missedUpdates: missedUpdates.load(ordering: .relaxed),
                        duplicatedUpdates: duplicatedUpdates.load(ordering: .relaxed))
    }
}

/// The counters of ``TickChecks``, read at one moment.
struct TickCheckCounts {
    var missedTicks = 0, duplicatedTicks = 0, missedUpdates = 0, duplicatedUpdates = 0

    /// The four counters as report members, each name after `prefix`.
    func json(prefix: String) -> [String: Any] {
        ["\(prefix)missed_ticks": missedTicks, "\(prefix)duplicated_ticks": duplicatedTicks,
         "\(prefix)missed_updates": missedUpdates, "\(prefix)duplicated_updates": duplicatedUpdates]
    }

    /// Whether any tick was missed or duplicated.
    var anyWrong: Bool { missedTicks > 0 || duplicatedTicks > 0 || missedUpdates > 0 || duplicatedUpdates > 0 }

    static func + (left: Self, right: Self) -> Self {
        Self(missedTicks: left.missedTicks + right.missedTicks, duplicatedTicks: left.duplicatedTicks + right.duplicatedTicks,
             missedUpdates: left.missedUpdates + right.missedUpdates,
             duplicatedUpdates: left.duplicatedUpdates + right.duplicatedUpdates)
    }
}

/// The counters of ``TimersTally``, read at one moment and summed over workers.
struct TimersCounts {
    var viewersReady = 0, added = 0, watchersConnected = 0, watchersSubscribed = 0, started = 0
    var ticks = 0, updates = 0, ticksSeen = 0
    /// Missed and duplicated ticks while measuring, and during the setup.
    var measured = TickCheckCounts(), setup = TickCheckCounts()
    var lateTicks = 0, errors = 0

    /// The sum over `tallies`.
    static func sum(_ tallies: [TimersTally]) -> TimersCounts {
        tallies.reduce(into: TimersCounts()) { total, tally in
            let part = tally.counts
            total.viewersReady += part.viewersReady
            total.added += part.added
            total.watchersConnected += part.watchersConnected
            total.watchersSubscribed += part.watchersSubscribed
            total.started += part.started
            total.ticks += part.ticks
            total.updates += part.updates
            total.ticksSeen += part.ticksSeen
            total.measured = total.measured + part.measured
            total.setup = total.setup + part.setup
            total.lateTicks += part.lateTicks
            total.errors += part.errors
        }
    }
}

/// Orders to a timers worker, posted from the coordinating thread.
enum TimersOrder: Sendable {
    /// Every timer is added: watchers subscribe to their lists.
    case subscribeWatchers
    /// Every watcher is subscribed: viewers start their timers.
    case startTimers
    /// Count ticks, updates and lateness (true) or stop counting (false).
    case measure(Bool)
    /// Close everything and let the loop exit.
    case finish
}
