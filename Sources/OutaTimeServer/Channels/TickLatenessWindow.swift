/// One channel's recent tick lateness, for `stats`' `slowest_channels`: the
/// worst lateness and the count of late ticks in the current window and the
/// one before it, so a reading covers the last one to two window lengths.
///
/// Windows are aligned on the server's monotonic clock (window k spans
/// [k × length, (k + 1) × length) ms) and rotated lazily, when a tick is
/// recorded or the window is read: O(1) per tick, and nothing to do for a
/// channel that does not tick. The length is passed in rather than stored,
/// so the struct costs each channel 40 bytes.
struct TickLatenessWindow {
    /// The worst lateness and the late ticks of some span of time.
    struct Reading: Equatable {
        /// The most a tick was built after it was due, in ms.
        var maxMs: UInt64 = 0
        /// Ticks built more than ``ServerCounters/lateTickMs`` after they were due.
        var late = 0

        /// The worst of both, and their late ticks together.
        func merged(with other: Reading) -> Reading {
            Reading(maxMs: max(maxMs, other.maxMs), late: late + other.late)
        }
    }

    /// The window `current` belongs to (monotonic ms / length).
    private var index: UInt64 = 0
    private var current = Reading()
    private var previous = Reading()

    /// Notes a tick built `latenessMs` after it was due, at monotonic time
    /// `nowMs`.
    mutating func record(latenessMs: UInt64, at nowMs: UInt64, windowMs: UInt64) {
        (index, current, previous) = rotated(to: nowMs, windowMs: windowMs)
        current.maxMs = max(current.maxMs, latenessMs)
        if latenessMs > ServerCounters.lateTickMs { current.late += 1 }
    }

    /// The current and the previous window together, as of `nowMs`. Reading
    /// does not rotate the stored windows: the next record does that, with
    /// the same outcome.
    func reading(at nowMs: UInt64, windowMs: UInt64) -> Reading {
        let (_, current, previous) = rotated(to: nowMs, windowMs: windowMs)
        return current.merged(with: previous)
    }

    /// The windows as they stand at `nowMs`: the same, moved back one, or
    /// (two windows or more later: nothing recorded recently) both empty.
    private func rotated(to nowMs: UInt64, windowMs: UInt64) -> (UInt64, Reading, Reading) {
        let now = nowMs / max(1, windowMs)
        if now == index { return (index, current, previous) }
        if now == index + 1 { return (now, Reading(), current) }
        return (now, Reading(), Reading())
    }
}
