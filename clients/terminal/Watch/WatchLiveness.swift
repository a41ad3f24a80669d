import OutaTimeClient

/// What each panel of `watch` was promised and when its data last came
/// (issue 27: never live-looking when stale). Fed by the session with loop
/// times; the verdicts are ``Staleness`` rules, so a test drives it with
/// made-up times and no clock.
struct WatchLiveness {
    /// One panel's record.
    struct Panel: Equatable {
        /// The tick cadence its state promises; nil while nothing runs.
        var cadenceMs: UInt64?
        /// When the data shown began to be what it is without a tick: the
        /// state change (an event, a subscribe result) that discarded the
        /// last tick or started the run.
        var sinceMs: UInt64 = 0
        /// When the tick shown arrived; nil when no tick is shown.
        var lastTickAtMs: UInt64?
        /// How old the tick shown already was when it arrived (its `at`
        /// against the server clock's estimate, ``ServerClock``); 0 when
        /// unknown (a car's or a stopwatch's tick carries no time).
        var tickAgeOnArrivalMs: UInt64 = 0
        /// The gap between ticks seen, smoothed: a server run with slower
        /// ticks than the default (`--delorean-tick-ms 500`) is not late.
        var observedGapMs: Double?
    }

    /// The cadences of PROTOCOL §14 at the server's defaults; the observed
    /// gap raises them for a server run with slower ticks.
    var deloreanTickMs: UInt64 = 100
    var lapTickMs: UInt64 = 100
    private(set) var panels: [String: Panel] = [:]

    /// The mirror of `channel` took an event or a `subscribe` result at
    /// `nowMs`: the promise follows its state. When the mirror dropped its
    /// tick (an event past it), the data shown is the new state, as of now.
    /// `ageOnArrivalMs`: how old the state already was when it arrived (a
    /// `subscribe` result's transfer time), counted against the promise.
    mutating func stateChanged(_ channel: String, mirror: ChannelMirror?, nowMs: UInt64, ageOnArrivalMs: UInt64 = 0) {
        var panel = panels[channel] ?? Panel()
        panel.cadenceMs = mirror?.tickCadenceMs(deloreanTickMs: deloreanTickMs, lapTickMs: lapTickMs)
        if mirror?.lastTick == nil {
            panel.sinceMs = nowMs &- min(ageOnArrivalMs, nowMs)
            panel.lastTickAtMs = nil
        }
        panels[channel] = panel
    }

    /// A tick of `channel` arrived at `nowMs`, already `ageOnArrivalMs` old.
    mutating func ticked(_ channel: String, nowMs: UInt64, ageOnArrivalMs: UInt64 = 0) {
        var panel = panels[channel] ?? Panel(sinceMs: nowMs)
        if let last = panel.lastTickAtMs, nowMs > last, nowMs - last < 2_000 {
            let gap = Double(nowMs - last)
            panel.observedGapMs = panel.observedGapMs.map { $0 * 0.9 + gap * 0.1 } ?? gap
        }
        panel.lastTickAtMs = nowMs
        panel.tickAgeOnArrivalMs = ageOnArrivalMs
        panels[channel] = panel
    }

    /// The promise `channel`'s panel holds now, if its state ticks.
    func promise(_ channel: String) -> TickPromise? {
        guard let panel = panels[channel], let cadence = panel.cadenceMs else { return nil }
        // Only the configurable cadences (a car's, a stopwatch's) follow what
        // is seen, up to a second; a countdown ticks each second by definition.
        let observed = cadence < 1_000 ? min(UInt64(panel.observedGapMs ?? 0), 1_000) : 0
        return TickPromise(cadenceMs: max(cadence, observed), sinceMs: panel.sinceMs)
    }

    /// The verdict on `channel`'s panel.
    func freshness(_ channel: String, link: LinkLiveness, nowMs: UInt64) -> Freshness {
        Staleness.view(ticks: promise(channel), lastTickAtMs: panels[channel]?.lastTickAtMs,
                       tickAgeOnArrivalMs: panels[channel]?.tickAgeOnArrivalMs ?? 0, link: link, nowMs: nowMs)
    }
}
