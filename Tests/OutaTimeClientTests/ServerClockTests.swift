import OutaTimeClient
import Testing

/// The server clock's offset and the age of what a view shows (issue 27: on a
/// 1 Mbit link ticks came regularly but 3–5 s old, and looked live). Made-up
/// wall times, no clock read.
@Suite("Staleness: server clock and data age")
struct ServerClockTests {
    /// Our clock runs 7,250 ms ahead of the server's.
    static let skew: Int64 = 7_250
    static let base: Int64 = 1_800_000_000_000

    /// A ping sent at our `sentMs`, taking `upMs` to reach the server and
    /// `downMs` back; the server stamps whole seconds.
    static func ping(_ clock: inout ServerClock, sentMs: Int64, upMs: Int64, downMs: Int64) {
        let serverNow = sentMs - skew + upMs
        let stamped = serverNow - ((serverNow % 1_000) + 1_000) % 1_000
        clock.sample(serverMs: stamped, precisionMs: 1_000, sentMs: sentMs, receivedMs: sentMs + upMs + downMs)
    }

    @Test("pings at several phases of the server's second find a skewed offset to about 0.1 s")
    func offsetFromPings() {
        var clock = ServerClock()
        #expect(clock.offsetMs == nil)
        for i in 0..<10 {
            Self.ping(&clock, sentMs: Self.base + Int64(i) * 1_100, upMs: 20, downMs: 20)
        }
        let offset = try! #require(clock.offsetMs)
        #expect(abs(Self.skew - offset) <= 150, "offset \(offset), skew \(Self.skew)")
        #expect(clock.lowMs! <= Self.skew && clock.highMs! >= Self.skew)
    }

    @Test("a reply stuck behind a snapshot on a congested downlink does not spoil the estimate")
    func congestedReply() {
        var clock = ServerClock()
        for i in 0..<10 {
            Self.ping(&clock, sentMs: Self.base + Int64(i) * 1_100, upMs: 20, downMs: 20)
        }
        let before = clock.offsetMs
        Self.ping(&clock, sentMs: Self.base + 20_000, upMs: 20, downMs: 9_000)
        #expect(clock.offsetMs == before)
        // Ticks all 3 s late (a saturated downlink) leave the upper bound
        // loose: the estimate leans at most 0.5 s off the lower bound.
        var congested = ServerClock()
        Self.ping(&congested, sentMs: Self.base, upMs: 20, downMs: 9_000)
        congested.sample(serverMs: Self.base + 10_000 - Self.skew, receivedMs: Self.base + 13_000)
        let age = try! #require(congested.ageMs(serverMs: Self.base + 20_000 - Self.skew, nowMs: Self.base + 23_000))
        #expect(age >= 2_400, "a tick 3 s old counts as \(age) ms old")
        // Only the reply's way back was slow: the server stamped it on
        // arrival, so even alone it bounds the offset within 1 s.
        var alone = ServerClock()
        Self.ping(&alone, sentMs: Self.base, upMs: 20, downMs: 9_000)
        #expect(abs(alone.offsetMs! - Self.skew) <= 1_020)
    }

    @Test("a stepped clock (contradicting samples) starts the estimate again")
    func steppedClock() {
        var clock = ServerClock()
        clock.sample(serverMs: 10_000, precisionMs: 1_000, sentMs: 20_000, receivedMs: 20_050)
        #expect(clock.lowMs == 9_000 && clock.highMs == 10_050)
        clock.sample(serverMs: 50_000, precisionMs: 1_000, sentMs: 20_100, receivedMs: 20_150)
        #expect(clock.lowMs == -30_900 && clock.highMs == -29_850)
    }

    @Test("a countdown tick whose at says it is 3 s old is stale on arrival; a fresh one is live")
    func tickAgeOnArrival() {
        var clock = ServerClock()
        for i in 0..<10 {
            Self.ping(&clock, sentMs: Self.base + Int64(i) * 1_100, upMs: 20, downMs: 20)
        }
        // A tick stamped at server second S arriving 3 s later (our clock).
        let serverAt = Self.base + 30_000 - Self.skew
        let late = try! #require(clock.ageMs(serverMs: serverAt, nowMs: serverAt + Self.skew + 3_000))
        #expect(late >= 2_850 && late <= 3_150, "\(late)")
        let fresh = try! #require(clock.ageMs(serverMs: serverAt, nowMs: serverAt + Self.skew + 40))
        #expect(fresh <= 250)

        let promise = TickPromise(cadenceMs: 1_000, sinceMs: 50_000)
        let link = LinkLiveness(isReady: true, lastFrameAtMs: 60_000)
        #expect(Staleness.view(ticks: promise, lastTickAtMs: 60_000, tickAgeOnArrivalMs: late, link: link, nowMs: 60_000)
                == .stale(ageMs: late, why: .ticksLate), "arrived on time by the cadence, but 3 s old")
        #expect(Staleness.view(ticks: promise, lastTickAtMs: 60_000, tickAgeOnArrivalMs: fresh, link: link, nowMs: 60_000)
                == .live)
        #expect(Staleness.view(ticks: promise, lastTickAtMs: 60_000, tickAgeOnArrivalMs: fresh, link: link, nowMs: 61_500)
                == .live, "a fresh tick shown until its successor is due")
        #expect(Staleness.view(ticks: promise, lastTickAtMs: 60_000, tickAgeOnArrivalMs: 1_500, link: link, nowMs: 60_600)
                == .stale(ageMs: 2_100, why: .ticksLate), "the age keeps growing while shown")
    }

    @Test("ticks regularly 3.2 s apart, each 3–5 s old (the 1 Mbit trial), are never live")
    func lateButRegular() {
        let promise = TickPromise(cadenceMs: 1_000, sinceMs: 0)
        for (arrival, ageOnArrival) in [(10_000, 3_000), (13_200, 4_100), (16_400, 5_000)] as [(UInt64, UInt64)] {
            let link = LinkLiveness(isReady: true, lastFrameAtMs: arrival)
            #expect(!Staleness.view(ticks: promise, lastTickAtMs: arrival, tickAgeOnArrivalMs: ageOnArrival,
                                    link: link, nowMs: arrival).isLive)
        }
    }

    @Test("only upper bounds (ticks' at, no round trip yet): ages are underestimated, never invented")
    func upperBoundsOnly() {
        var clock = ServerClock()
        clock.sample(serverMs: 1_000, receivedMs: 9_500)
        clock.sample(serverMs: 2_000, receivedMs: 10_300)
        #expect(clock.lowMs == nil && clock.highMs == 8_300)
        #expect(clock.ageMs(serverMs: 3_000, nowMs: 11_300) == 0)
        #expect(clock.ageMs(serverMs: 3_000, nowMs: 14_300) == 3_000)
    }
}
