import Foundation
import OutaTimeDomain
import UV

/// The server's domain clock: wall time read once at start, advanced by the
/// monotonic clock. Countdowns and stopwatches never jump when the system
/// clock is set, and domain times agree with the scheduler's deadlines.
struct MonotonicClock: DomainClock {
    private let wallAtStart: Date
    private let monotonicAtStart: UInt64

    init() {
        wallAtStart = Date()
        monotonicAtStart = Loop.hrtime
    }

    var now: Date {
        wallAtStart.addingTimeInterval(Double(Loop.hrtime - monotonicAtStart) / 1e9)
    }

    /// The domain time at loop time `milliseconds` (inverse of
    /// ``loopMilliseconds(for:)``, to the millisecond).
    func date(atLoopMilliseconds milliseconds: UInt64) -> Date {
        wallAtStart.addingTimeInterval((Double(milliseconds) * 1e6 - Double(monotonicAtStart)) / 1e9)
    }

    /// The loop time (`uv_now` milliseconds, from the same monotonic clock)
    /// at which `date` arrives, rounded up so the domain sees it as passed.
    func loopMilliseconds(for date: Date) -> UInt64 {
        let nanoseconds = Double(monotonicAtStart) + date.timeIntervalSince(wallAtStart) * 1e9
        return UInt64(max(0, min((nanoseconds / 1e6).rounded(.up), 1e15)))
    }
}
