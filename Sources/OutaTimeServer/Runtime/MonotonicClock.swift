import Foundation
import OutaTimeDomain
import UV

/// The server's domain clock: wall time read once at start, advanced by the
/// monotonic clock. Countdowns and stopwatches never jump when the system
/// clock is set, and domain times agree with the scheduler's deadlines.
///
/// It shares its offset with the ``ServerClock``: a test that moves the
/// server's time forward moves the domain's with it, so loop deadlines
/// (``loopMilliseconds(for:)``, in the server clock's milliseconds) and
/// domain times stay one clock.
struct MonotonicClock: DomainClock {
    private let wallAtStart: Date
    private let monotonicAtStart: UInt64
    private let offset: ClockOffset

    init(offset: ClockOffset = ClockOffset()) {
        wallAtStart = Date()
        monotonicAtStart = Loop.hrtime
        self.offset = offset
    }

    var now: Date {
        let elapsed = Loop.hrtime &+ offset.milliseconds &* 1_000_000 &- monotonicAtStart
        return wallAtStart.addingTimeInterval(Double(elapsed) / 1e9)
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
