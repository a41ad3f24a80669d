import OutaTimeDomain

/// What the mirror's state promises (issue 27): ticks while something runs.
extension ChannelMirror {
    /// The tick cadence the mirror's state promises (PROTOCOL §14's table):
    /// a DeLorean accelerating every `deloreanTickMs`, a list with a running
    /// countdown every second, a running stopwatch every `lapTickMs`; nil
    /// when nothing runs (or before the first state). O(1), but O(n) for a
    /// timer list synced from a snapshot.
    public func tickCadenceMs(deloreanTickMs: UInt64 = 100, lapTickMs: UInt64 = 100) -> UInt64? {
        switch state {
        case .delorean(let car)?: car.isAccelerating ? deloreanTickMs : nil
        // A list read from a `subscribe` result has no countdown bases (they
        // are never on the wire), so `earliestRunningSince` only knows the
        // runs this mirror saw start: the status says it too (O(n), once
        // per state change; issue 27: a 6,000-timer list on a slow link was
        // never marked stale).
        case .timers(let list)?:
            list.earliestRunningSince != nil || list.timers.contains(where: { $0.status == .running }) ? 1_000 : nil
        case .laps(let session)?: session.status == .running ? lapTickMs : nil
        case .starport?, nil: nil
        }
    }
}
