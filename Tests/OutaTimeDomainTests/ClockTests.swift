import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import Testing

@Suite struct ClockTests {
    @Test func manualClockStandsStillUntilMoved() {
        let clock = ManualClock(iso: "1985-10-26T01:21:00Z")!
        #expect(ISOTime.format(clock.now) == "1985-10-26T01:21:00Z")
        #expect(ISOTime.format(clock.now) == "1985-10-26T01:21:00Z")
        clock.advance(by: 60)
        #expect(ISOTime.format(clock.now) == "1985-10-26T01:22:00Z")
        clock.now = ISOTime.parse("1955-11-12T22:04:00Z")!
        #expect(ISOTime.format(clock.now) == "1955-11-12T22:04:00Z")
    }

    @Test func manualClockRejectsBadISO() {
        #expect(ManualClock(iso: "next tuesday") == nil)
    }

    @Test func manualClockIsSafeAcrossThreads() {
        let start = Date(timeIntervalSince1970: 0)
        let clock = ManualClock(start)
        DispatchQueue.concurrentPerform(iterations: 1_000) { _ in
            clock.advance(by: 1)
        }
        #expect(clock.now == start.addingTimeInterval(1_000))
    }

    @Test func clocksAreUsableThroughTheProtocol() {
        let clocks: [any DomainClock] = [SystemClock(), ManualClock(Date(timeIntervalSince1970: 0))]
        #expect(abs(clocks[0].now.timeIntervalSinceNow) < 5)
        #expect(clocks[1].now == Date(timeIntervalSince1970: 0))
    }
}
