import Synchronization
import UV

/// The one time the server reads for its deadlines: hello and idle
/// timeouts, linger, request-rate windows, the `hello` throttle, idle
/// channels, proxy-header waits, HTTP timeouts, cluster waits, the
/// schedulers' wake-ups — and, through ``MonotonicClock``, the domain's
/// time. It is the loop's cached time (`uv_now`, milliseconds) plus an
/// offset that is 0 in a running server.
///
/// The offset is the test seam: a test moves the server's time forward
/// with `ServerHandle.advanceClock(milliseconds:)` (internal) instead of
/// sleeping through a timeout; the server then sweeps and fires what fell
/// due at once. Time only moves forward, so every deadline read through
/// this clock stays ordered. What measures how long work took (the read
/// and report budgets of one loop iteration, write coalescing) reads
/// `Loop.hrtime` directly: advancing the clock must not make work look slow.
/// Loop thread only, except ``ClockOffset`` (the domain clock may be read
/// anywhere).
final class ServerClock {
    private let loop: Loop
    /// Shared with the domain clock (``MonotonicClock``).
    let offset: ClockOffset

    init(loop: Loop, offset: ClockOffset = ClockOffset()) {
        self.loop = loop
        self.offset = offset
    }

    /// The server's time in milliseconds: the loop's (cached at the start
    /// of each iteration) plus the offset. Use it wherever a deadline is
    /// set or checked.
    var now: UInt64 { loop.now &+ offset.milliseconds }

    /// The server's time in nanoseconds (`Loop.hrtime` plus the offset):
    /// a fresh reading, for lateness measured against deadlines of ``now``.
    var hrtime: UInt64 { Loop.hrtime &+ offset.milliseconds &* 1_000_000 }

    /// Refreshes the loop's cached time (after long work in one callback).
    func refresh() { loop.updateTime() }

    /// Moves the server's time `milliseconds` forward (tests only: see
    /// `ServerHandle.advanceClock(milliseconds:)`).
    func advance(milliseconds: UInt64) {
        offset.add(milliseconds)
    }
}

/// The milliseconds a test moved the server's time forward; 0 otherwise.
/// Atomic: the domain clock is `Sendable` and may be read off the loop.
final class ClockOffset: Sendable {
    private let value = Atomic<UInt64>(0)

    init() {}

    var milliseconds: UInt64 { value.load(ordering: .relaxed) }

    func add(_ milliseconds: UInt64) {
        value.add(milliseconds, ordering: .relaxed)
    }
}
