import OutaTimeClient
import Testing

/// The staleness rules as pure functions of (promise, last data, now): made-up
/// loop times, no clock (issue 27: never live-looking when stale).
@Suite("Staleness")
struct StalenessTests {
    static let up = LinkLiveness(isReady: true, lastFrameAtMs: 10_000)

    @Test("an idle view of a ready, recently heard link is live")
    func idleLive() {
        #expect(Staleness.view(ticks: nil, lastTickAtMs: nil, link: Self.up, nowMs: 10_500) == .live)
        #expect(Staleness.link(Self.up, nowMs: 60_000) == .live, "silence alone, no ping out: an idle server")
    }

    @Test("while not connected every view is stale, aged from its data")
    func disconnected() {
        let down = LinkLiveness(isReady: false, lastFrameAtMs: 10_000)
        #expect(Staleness.view(ticks: nil, lastTickAtMs: nil, link: down, nowMs: 13_100)
                == .stale(ageMs: 3_100, why: .disconnected))
        let promise = TickPromise(cadenceMs: 100, sinceMs: 9_000)
        #expect(Staleness.view(ticks: promise, lastTickAtMs: 9_800, link: down, nowMs: 10_050)
                == .stale(ageMs: 250, why: .disconnected), "at once, not after the tick limit")
    }

    @Test("a ticking view turns stale past its limit (1 s at 100 ms ticks) without a tick, with the tick's age")
    func ticksLate() {
        let promise = TickPromise(cadenceMs: 100, sinceMs: 9_000)
        #expect(promise.limitMs == 1_000)
        let link = LinkLiveness(isReady: true, lastFrameAtMs: 10_000)
        #expect(Staleness.view(ticks: promise, lastTickAtMs: 10_000, link: link, nowMs: 11_000) == .live)
        #expect(Staleness.view(ticks: promise, lastTickAtMs: 10_000, link: link, nowMs: 11_001)
                == .stale(ageMs: 1_001, why: .ticksLate))
        #expect(TickPromise(cadenceMs: 1_000, sinceMs: 0).limitMs == 2_000, "a countdown's second may be 1 s late")
        #expect(TickPromise(cadenceMs: 500, sinceMs: 0).limitMs == 1_500, "three cadences")
    }

    @Test("before its first tick a run is judged from when it began")
    func beforeFirstTick() {
        let promise = TickPromise(cadenceMs: 100, sinceMs: 20_000)
        let link = LinkLiveness(isReady: true, lastFrameAtMs: 20_000)
        #expect(Staleness.view(ticks: promise, lastTickAtMs: nil, link: link, nowMs: 20_900) == .live)
        #expect(Staleness.view(ticks: promise, lastTickAtMs: nil, link: link, nowMs: 21_200)
                == .stale(ageMs: 1_200, why: .ticksLate))
        #expect(Staleness.view(ticks: promise, lastTickAtMs: 15_000, link: link, nowMs: 20_100) == .live,
                "a tick older than the run's start is not what is shown")
    }

    @Test("a ready link with a ping out is silent after 1.5 s without frames and 3 RTT (0.5…3 s) of waiting")
    func silentLink() {
        var link = LinkLiveness(isReady: true, lastFrameAtMs: 10_000, pingSentAtMs: 11_000, rttMs: 80)
        #expect(Staleness.link(link, nowMs: 11_400) == .live)
        #expect(Staleness.link(link, nowMs: 11_500) == .stale(ageMs: 1_500, why: .silentLink))
        #expect(Staleness.view(ticks: nil, lastTickAtMs: nil, link: link, nowMs: 11_600)
                == .stale(ageMs: 1_600, why: .silentLink), "every view of a silent link")
        link.rttMs = 600  // a satellite hop: the reply may take 1.8 s
        #expect(Staleness.link(link, nowMs: 12_700) == .live)
        #expect(Staleness.link(link, nowMs: 12_800) == .stale(ageMs: 2_800, why: .silentLink))
        link.rttMs = 5_000  // an estimate spoilt by a congested moment: waits 3 s at most
        #expect(Staleness.link(link, nowMs: 13_900) == .live)
        #expect(Staleness.link(link, nowMs: 14_000) == .stale(ageMs: 4_000, why: .silentLink))
        link.lastFrameAtMs = 12_000  // a frame after the ping: the link talks, even if the ping is slow
        #expect(Staleness.link(link, nowMs: 13_000) == .live)
    }
}
