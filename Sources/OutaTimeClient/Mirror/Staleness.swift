// Whether what a view shows of a channel is live, or stale and how old
// (issue 27: a board must never look live when it is not). Pure functions of
// what was promised, when data last arrived and now, all in loop milliseconds:
// no clock is read here, so every rule is tested without waiting.

/// What a view of a channel is promised besides the connection's liveness:
/// ticks at a cadence while something runs (PROTOCOL §14: a DeLorean's speed
/// every `--delorean-tick-ms`, a list's countdowns every second, a running
/// stopwatch every `--lap-tick-ms`).
public struct TickPromise: Sendable, Equatable {
    /// Ticks are due this often.
    public var cadenceMs: UInt64
    /// Loop time the promise began: when the state that makes the channel
    /// tick (a trip started, a timer started) arrived. Before its first tick,
    /// the data shown is that state.
    public var sinceMs: UInt64

    /// A promise of a tick every `cadenceMs` from `sinceMs` on.
    public init(cadenceMs: UInt64, sinceMs: UInt64) {
        self.cadenceMs = cadenceMs
        self.sinceMs = sinceMs
    }

    /// How old the data shown may get before the view says it is stale:
    /// three cadences, or one cadence and a second of lateness if that is
    /// less, and at least a second. A jittery WAN delivers 100 ms ticks in
    /// bunches (p99 delay 138–220 ms at 80 ms RTT), so 1 s for a car or a
    /// stopwatch; a countdown's second may be 1 s late: 2 s (issue 27: never
    /// values older than 2 s shown as live).
    public var limitMs: UInt64 {
        max(min(3 * cadenceMs, cadenceMs + Staleness.minimumLimitMs), Staleness.minimumLimitMs)
    }
}

/// The connection as the liveness rules see it.
public struct LinkLiveness: Sendable, Equatable {
    /// `hello` succeeded and the connection has not dropped since.
    public var isReady: Bool
    /// Loop time of the last frame received (any frame: a push, a reply); nil before the first.
    public var lastFrameAtMs: UInt64?
    /// Loop time a liveness `ping` went out that is still unanswered; nil when none is.
    public var pingSentAtMs: UInt64?
    /// The smoothed round-trip time, if measured.
    public var rttMs: UInt64?

    /// A connection's liveness.
    public init(isReady: Bool, lastFrameAtMs: UInt64?, pingSentAtMs: UInt64? = nil, rttMs: UInt64? = nil) {
        self.isReady = isReady
        self.lastFrameAtMs = lastFrameAtMs
        self.pingSentAtMs = pingSentAtMs
        self.rttMs = rttMs
    }
}

/// Whether a view is live, and if not, why and since when its data is old.
public enum Freshness: Sendable, Equatable {
    /// Everything promised arrived in time.
    case live
    /// Promised data is late: the values shown are `ageMs` old.
    case stale(ageMs: UInt64, why: StaleCause)

    /// True for ``live``.
    public var isLive: Bool { self == .live }
}

/// Why a view is stale.
public enum StaleCause: String, Sendable, Equatable {
    /// The connection is down (reconnecting, connecting, closed).
    case disconnected
    /// The connection is up but silent: a ping is unanswered for too long.
    case silentLink = "silent_link"
    /// The connection answers, but the channel's promised ticks stopped.
    case ticksLate = "ticks_late"
}

/// The staleness rules.
public enum Staleness {
    /// The least lateness that counts: under a second of silence is normal jitter.
    public static let minimumLimitMs: UInt64 = 1_000
    /// Silence after which a link with a ping out counts as silent: about
    /// 1.5 s, so that a cut shows within 2 s (issue 27).
    public static let silentLinkMs: UInt64 = 1_500
    /// How long a ping may stay unanswered, at least, before the link counts
    /// as silent: a slow link's reply is not a dead one.
    public static let minimumPingWaitMs: UInt64 = 500
    /// How long a ping may stay unanswered, at most: a round-trip estimate
    /// spoilt by a congested moment must not hide a cut for long.
    public static let maximumPingWaitMs: UInt64 = 3_000

    /// The connection's own verdict: stale while not ready; stale when a
    /// ping is out unanswered for 3 RTT (within 0.5…3 s) and nothing at all
    /// arrived for 1.5 s. The age is the time since the last frame.
    public static func link(_ link: LinkLiveness, nowMs: UInt64) -> Freshness {
        let silence = link.lastFrameAtMs.map { nowMs &- min($0, nowMs) } ?? 0
        guard link.isReady else { return .stale(ageMs: silence, why: .disconnected) }
        guard let ping = link.pingSentAtMs else { return .live }
        let waited = nowMs &- min(ping, nowMs)
        let patience = max(minimumPingWaitMs, min(3 * (link.rttMs ?? 0), maximumPingWaitMs))
        return silence >= silentLinkMs && waited >= patience ? .stale(ageMs: silence, why: .silentLink) : .live
    }

    /// A view's verdict from what it was promised (`ticks`, nil when nothing
    /// runs), when its last tick arrived (`lastTickAtMs`, nil if none since
    /// the promise began), the connection, and now. A view of a dead or
    /// silent connection is stale with the age of its data; a running view
    /// whose tick is later than ``TickPromise/limitMs`` is stale with the
    /// age of the last tick (or of the promise, before its first tick).
    ///
    /// The age is that of what is shown, not only the time since it came:
    /// `tickAgeOnArrivalMs` is how old the last tick already was when it
    /// arrived (from its own time stamp, ``ServerClock``). A tick that
    /// arrives regularly but late — a 300 KB tick on a 1 Mbit link, 3–5 s
    /// old on arrival (issue 27) — is stale on arrival: ages are judged
    /// against the same ``TickPromise/limitMs``.
    public static func view(ticks: TickPromise?, lastTickAtMs: UInt64?, tickAgeOnArrivalMs: UInt64 = 0,
                            link: LinkLiveness, nowMs: UInt64) -> Freshness {
        // The data shown is as old as the last tick of the run, or the state
        // that began the run; an idle view's data is as old as the last frame
        // (any frame proves nothing changed before it).
        let dataAt: UInt64? = ticks.map { promise in max(promise.sinceMs, lastTickAtMs ?? 0) } ?? link.lastFrameAtMs
        var age = dataAt.map { nowMs &- min($0, nowMs) } ?? 0
        if ticks != nil, let lastTickAtMs, lastTickAtMs >= (ticks?.sinceMs ?? 0) {
            age += tickAgeOnArrivalMs
        }
        switch Self.link(link, nowMs: nowMs) {
        case .stale(_, let why): return .stale(ageMs: age, why: why)
        case .live: break
        }
        guard let ticks else { return .live }
        return age > ticks.limitMs ? .stale(ageMs: age, why: .ticksLate) : .live
    }
}
