/// Failed `hello`s per key (a client address, a presented token's digest)
/// in fixed windows, in bounded memory (loop thread only; times are loop
/// milliseconds given by the caller, so tests need no clock).
///
/// A key's window starts at its first failure after the previous window
/// ended and lasts ``windowMs``; neither failures nor hellos during it extend
/// it. At most ``capacity`` keys are tracked: past that, a new key's failures
/// are counted under one shared overflow entry, which throttles every
/// untracked key alike (``failures(of:now:)`` reads it for them), so an
/// attacker cycling through addresses or random tokens cannot grow memory,
/// and cannot escape the count either. The overflow entry only ever slows
/// `hello`s (``HelloThrottle``); it never refuses one.
struct FailureCounts<Key: Hashable> {
    /// One key's window.
    struct Window {
        var failures: Int
        /// Loop time (ms) the window ends.
        var end: UInt64
    }

    /// How long a window lasts.
    let windowMs: UInt64
    /// Keys tracked at most (the overflow entry aside).
    let capacity: Int
    private var windows: [Key: Window] = [:]
    private var overflow: Window?

    init(windowMs: UInt64, capacity: Int) {
        self.windowMs = windowMs
        self.capacity = max(1, capacity)
    }

    /// Keys tracked now (expired windows count until ``forgetExpired(now:)``).
    var count: Int { windows.count }

    /// Failures of `key` in its window at `now` (0 once the window ended);
    /// an untracked key reads the overflow entry.
    func failures(of key: Key, now: UInt64) -> Int {
        let window = windows[key] ?? overflow
        guard let window, now < window.end else { return 0 }
        return window.failures
    }

    /// Records one failure of `key` at `now`.
    mutating func failed(_ key: Key, now: UInt64) {
        if var window = windows[key] {
            if now >= window.end { window = Window(failures: 0, end: now + windowMs) }
            window.failures += 1
            windows[key] = window
        } else if windows.count < capacity {
            windows[key] = Window(failures: 1, end: now + windowMs)
        } else {
            var window = overflow.flatMap { now < $0.end ? $0 : nil } ?? Window(failures: 0, end: now + windowMs)
            window.failures += 1
            overflow = window
        }
    }

    /// Drops the windows that ended by `now`. O(tracked keys): the server
    /// calls it from its sweep.
    mutating func forgetExpired(now: UInt64) {
        windows = windows.filter { now < $0.value.end }
        if let window = overflow, now >= window.end { overflow = nil }
    }
}
