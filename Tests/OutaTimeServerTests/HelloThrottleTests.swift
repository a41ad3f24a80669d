@testable import OutaTimeServer
import Testing

/// The failed-hello throttle and its bounded tables, on loop times given by
/// the test.
@Suite("hello throttle")
struct HelloThrottleTests {
    @Test("failures are free up to the limit; beyond, every hello waits alike, doubling up to the cap")
    func delays() {
        var throttle = HelloThrottle(freeFailures: 3, baseDelayMs: 250, maxDelayMs: 2_000, windowMs: 60_000)
        var seen: [UInt64] = []
        for _ in 0..<7 {
            let failures = throttle.failures(address: "10.0.0.1", token: nil, now: 0)
            #expect(throttle.delayMs(failures: failures, succeeded: false)
                == (throttle.isThrottled(failures) ? throttle.delayMs(failures: failures, succeeded: true) : 250))
            seen.append(throttle.delayMs(failures: failures, succeeded: true))
            throttle.failed(address: "10.0.0.1", token: nil, now: 0)
        }
        #expect(seen == [0, 0, 0, 250, 500, 1_000, 2_000])
        #expect(throttle.delayMs(failures: 1_000, succeeded: true) == 2_000)
        // Another address is not slowed.
        #expect(throttle.failures(address: "10.0.0.2", token: nil, now: 0) == 0)
    }

    @Test("a token's failures count from every address")
    func perToken() {
        var throttle = HelloThrottle(freeFailures: 2, baseDelayMs: 10, maxDelayMs: 100, windowMs: 1_000)
        let digest: [UInt8] = [1, 2, 3]
        throttle.failed(address: "10.0.0.1", token: digest, now: 0)
        throttle.failed(address: "10.0.0.2", token: digest, now: 0)
        #expect(throttle.failures(address: "10.0.0.3", token: digest, now: 0) == 2)
        #expect(throttle.failures(address: "10.0.0.3", token: [9], now: 0) == 0)
        #expect(throttle.failures(address: "10.0.0.1", token: [9], now: 0) == 1)
    }

    @Test("windows end, and ended ones are forgotten")
    func windows() {
        var counts = FailureCounts<String>(windowMs: 100, capacity: 10)
        counts.failed("a", now: 0)
        counts.failed("a", now: 50)
        #expect(counts.failures(of: "a", now: 99) == 2)
        #expect(counts.failures(of: "a", now: 100) == 0)
        counts.failed("a", now: 150)  // a new window, counted from 1
        #expect(counts.failures(of: "a", now: 150) == 1)
        counts.forgetExpired(now: 250)
        #expect(counts.count == 0)
    }

    @Test("past the capacity new keys share one entry: memory is bounded and the count still applies")
    func capacity() {
        var counts = FailureCounts<String>(windowMs: 1_000, capacity: 2)
        for key in ["a", "b", "c", "d", "e"] { counts.failed(key, now: 0) }
        #expect(counts.count == 2)
        #expect(counts.failures(of: "a", now: 0) == 1)
        #expect(counts.failures(of: "z", now: 0) == 3)  // c, d, e: any untracked key reads them
        counts.forgetExpired(now: 1_000)
        #expect(counts.count == 0)
        #expect(counts.failures(of: "z", now: 1_000) == 0)
    }

    @Test("--proxy-from values: addresses and CIDR networks, IPv4 and IPv6; bad values name the flag")
    func addressRanges() throws {
        let eight = try AddressRange("10.0.0.0/8")
        #expect(eight.contains("10.200.3.4") && !eight.contains("11.0.0.1") && !eight.contains("::1"))
        #expect(eight.contains("::ffff:10.0.0.5"))
        #expect(try AddressRange("192.0.2.7").contains("192.0.2.7") && !(try AddressRange("192.0.2.7").contains("192.0.2.8")))
        let v6 = try AddressRange("2001:db8::/32")
        #expect(v6.contains("2001:db8:1::5") && !v6.contains("2001:db9::1") && !v6.contains("10.0.0.1"))
        #expect(try AddressRange("10.1.2.3/12").description == "10.0.0.0/12")
        #expect(try AddressRange("0.0.0.0/0").contains("8.8.8.8"))
        for bad in ["10.0.0.0/33", "::/129", "10.0.0/8", "example.com", "10.0.0.0/", "10.0.0.0/-1", ""] {
            do {
                _ = try AddressRange(bad)
                Issue.record("accepted '\(bad)'")
            } catch {
                #expect(error.message.contains("--proxy-from '\(bad)'"), "\(error.message)")
            }
        }
    }
}
