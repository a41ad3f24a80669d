import OutaTimeDomain

/// What the mirror's state promises (issue 27): ticks while something runs.
extension ChannelMirror {
    /// The tick cadence the mirror's state promises (PROTOCOL §14's table):
    /// a DeLorean accelerating every `deloreanTickMs`, a list with a running
    /// countdown every second, a running stopwatch every `lapTickMs`; nil
    /// when nothing runs (or before the first state). O(1).
    public func tickCadenceMs(deloreanTickMs: UInt64 = 100, lapTickMs: UInt64 = 100) -> UInt64? {
        switch state {
        case .delorean(let car)?: car.isAccelerating ? deloreanTickMs : nil
        case .timers(let list)?: list.earliestRunningSince != nil ? 1_000 : nil
        case .laps(let session)?: session.status == .running ? lapTickMs : nil
        case .starport?, nil: nil
        }
    }
}
