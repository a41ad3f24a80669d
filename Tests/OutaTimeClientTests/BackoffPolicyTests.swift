import OutaTimeClient
import Testing
import OutaTimeTestKit

@Suite("Backoff policy")
struct BackoffPolicyTests {
    let policy = BackoffPolicy(initialMs: 100, maxMs: 5_000, multiplier: 2, jitter: 0.2)

    @Test("base delays double from 100 ms and stop at 5 s", arguments: [
        (1, 100), (2, 200), (3, 400), (4, 800), (5, 1_600), (6, 3_200), (7, 5_000), (8, 5_000), (50, 5_000), (10_000, 5_000),
    ] as [(Int, UInt64)])
    func baseDelays(attempt: Int, expected: UInt64) {
        #expect(policy.baseDelayMs(attempt: attempt) == expected)
        // The middle of the random range is the base delay itself.
        #expect(policy.delayMs(attempt: attempt, unit: 0.5) == expected)
    }

    @Test("jitter moves a delay by at most ±20%")
    func jitterBounds() {
        #expect(policy.delayMs(attempt: 3, unit: 0) == 320)
        #expect(policy.delayMs(attempt: 3, unit: 0.25) == 360)
        #expect(policy.delayMs(attempt: 3, unit: 0.75) == 440)
        #expect(policy.delayMs(attempt: 3, unit: 0.999_999) == 480)
        for step in 0..<100 {
            let delay = policy.delayMs(attempt: 4, unit: Double(step) / 100)
            #expect((640...960).contains(delay), "attempt 4, unit \(step)%: \(delay) ms")
        }
    }

    @Test("delays never exceed the maximum, jitter included")
    func bounded() {
        for attempt in 1...40 {
            for unit in [0.0, 0.5, 0.99] {
                #expect(policy.delayMs(attempt: attempt, unit: unit) <= 5_000)
            }
        }
        #expect(policy.delayMs(attempt: 30, unit: 0) == 4_000)
    }

    @Test("delays grow with the attempt for a fixed random draw")
    func growing() {
        for unit in [0.0, 0.3, 0.5, 0.9] {
            let delays = (1...10).map { policy.delayMs(attempt: $0, unit: unit) }
            #expect(delays == delays.sorted(), "unit \(unit): \(delays)")
            #expect(delays.first! < delays.last!)
        }
    }

    @Test("an injected generator makes the sequence reproducible")
    func injectedGenerator() {
        var first = SeededGenerator(seed: 42)
        var second = SeededGenerator(seed: 42)
        let a = (1...8).map { policy.delayMs(attempt: $0, using: &first) }
        let b = (1...8).map { policy.delayMs(attempt: $0, using: &second) }
        #expect(a == b)
        for (index, delay) in a.enumerated() {
            let base = Double(policy.baseDelayMs(attempt: index + 1))
            #expect(Double(delay) >= (base * 0.8).rounded(.down) && Double(delay) <= min(base * 1.2, 5_000).rounded(.up))
        }
    }

    @Test("odd settings are clamped: no jitter, multiplier below 1, initial above max")
    func clamped() {
        let flat = BackoffPolicy(initialMs: 50, maxMs: 50, multiplier: 0.5, jitter: -1)
        #expect((1...5).map { flat.delayMs(attempt: $0, unit: 0.9) } == [50, 50, 50, 50, 50])
        let big = BackoffPolicy(initialMs: 10_000, maxMs: 300)
        #expect(big.delayMs(attempt: 1, unit: 0.5) == 300)
    }
}
