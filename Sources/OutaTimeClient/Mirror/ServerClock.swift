// How far the server's clock is from ours (issue 27: on a 1 Mbit link a
// 6,000-timer tick arrived every 3.2 s, each already 3–5 s old, and looked
// live). A view judges the age of what it shows from the server's own time
// stamps — a timer tick's `at` (milliseconds, PROTOCOL §14) — so it needs
// the offset between the two clocks. Pure: every time is passed in.

/// Bounds on the offset between our wall clock and the server's,
/// `offset = ours − server's`, from samples of the server's time.
///
/// Each sample is a bound that holds whatever the network did: a `ping`
/// reply stamped `T` in whole seconds was stamped at a server moment in
/// `[T, T + 1 s)` between our send and our receipt, so the offset lies in
/// `[sent − T − 1 s, received − T]`; anything the server stamped `T` (a
/// tick's `at`, an event's `at`) was built at or after `T` and received
/// later, so the offset is at most `received − T`. The bounds of all
/// samples are intersected (the interval form of NTP's "take the sample
/// with the smallest round trip"): a sample delayed by a congested link is
/// only a loose bound and changes nothing, and samples whose second falls
/// at different phases narrow the interval below the 1 s precision. When
/// the samples contradict each other (a clock was stepped) the newest one
/// starts the interval again.
public struct ServerClock: Sendable, Equatable {
    /// The least offset possible, in ms; nil before a sample that bounds it.
    public private(set) var lowMs: Int64?
    /// The greatest offset possible, in ms; nil before the first sample.
    public private(set) var highMs: Int64?

    /// No samples yet.
    public init() {}

    /// A reply stamped `serverMs` (its precision `precisionMs`: 1,000 for
    /// whole seconds) to a request sent at `sentMs` and received at
    /// `receivedMs` (our wall clock, ms).
    public mutating func sample(serverMs: Int64, precisionMs: Int64, sentMs: Int64, receivedMs: Int64) {
        add(low: sentMs - serverMs - precisionMs, high: receivedMs - serverMs)
    }

    /// Something the server stamped `serverMs` (built then or later)
    /// received at `receivedMs`.
    public mutating func sample(serverMs: Int64, receivedMs: Int64) {
        add(low: nil, high: receivedMs - serverMs)
    }

    private mutating func add(low: Int64?, high: Int64) {
        let newLow = max(lowMs ?? Int64.min, low ?? Int64.min)
        let newHigh = min(highMs ?? Int64.max, high)
        if newLow > newHigh {
            // Contradiction: a clock was stepped. Start again from this sample.
            lowMs = low
            highMs = high
        } else {
            lowMs = newLow == Int64.min ? nil : newLow
            highMs = newHigh
        }
    }

    /// The offset used: the middle of the interval, but at most
    /// ``maximumLeanMs`` above its lower bound; its upper bound while only
    /// upper bounds are known (ages then underestimated, never invented);
    /// nil before the first sample.
    ///
    /// Why: the lower bound comes from round trips and stays within about
    /// 0.1 s once pings landed at several phases of the server's second
    /// (the watcher pings 1.1 s apart at first), even on a congested
    /// downlink — the server stamps a ping when it reads it, however long
    /// the reply then waits behind a snapshot. The upper bound is tight on
    /// a healthy link (a tick's `at` arrives within milliseconds) but
    /// seconds loose on a congested one (every tick is late). So the
    /// estimate errs by at most half the interval and at most 0.5 s toward
    /// younger: a tick 3 s old still counts as at least 2.5 s old, and a
    /// fresh one on a healthy link is not aged by the 1 s precision.
    public var offsetMs: Int64? {
        guard let highMs else { return nil }
        guard let lowMs else { return highMs }
        return lowMs + min((highMs - lowMs) / 2, Self.maximumLeanMs)
    }

    /// How far above the lower bound the estimate may lean (see ``offsetMs``).
    public static let maximumLeanMs: Int64 = 500

    /// How old a value the server stamped `serverMs` is at our wall time
    /// `nowMs`: 0 when it looks to be from the future, nil without samples.
    public func ageMs(serverMs: Int64, nowMs: Int64) -> UInt64? {
        guard let offset = offsetMs else { return nil }
        return UInt64(max(0, nowMs - offset - serverMs))
    }
}
