/// At most `limit` log lines of one kind per window of `windowMs`
/// milliseconds: what keeps a flood of failed hellos from flooding the log.
/// Pure (the caller passes the loop's time). The first line let through in
/// a new window tells how many were dropped before it; lines dropped in the
/// last window before a quiet spell are never told (the counters are).
struct LogRateLimit {
    /// Lines let through per window.
    let limit: Int
    /// The window's length.
    let windowMs: UInt64
    private var windowStart: UInt64?
    private var used = 0
    private var dropped = 0

    init(limit: Int, windowMs: UInt64) {
        self.limit = limit
        self.windowMs = windowMs
    }

    /// Whether a line may be logged at `now`: nil when it must be dropped,
    /// else the number of lines dropped since the last one let through.
    mutating func admit(now: UInt64) -> Int? {
        if let start = windowStart, now &- start < windowMs {
            guard used < limit else {
                dropped += 1
                return nil
            }
        } else {
            windowStart = now
            used = 0
        }
        used += 1
        defer { dropped = 0 }
        return dropped
    }
}
