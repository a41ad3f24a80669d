/// How long to wait before each reconnect attempt: exponential growth from
/// ``initialMs`` up to ``maxMs``, spread by a random ``jitter`` so that many
/// clients dropped by one server restart do not all come back in the same
/// millisecond.
///
/// Pure: the randomness is a parameter, so tests pin it.
public struct BackoffPolicy: Sendable, Equatable {
    /// The base delay of the first attempt, in milliseconds.
    public var initialMs: UInt64
    /// The longest delay ever returned, in milliseconds (jitter included).
    public var maxMs: UInt64
    /// Each attempt's base delay is the previous one times this (≥ 1).
    public var multiplier: Double
    /// The fraction by which a delay may move either way: 0.2 is ±20%.
    public var jitter: Double

    /// Creates a policy; the defaults are 100 ms doubling to at most 5 s, ±20%.
    public init(initialMs: UInt64 = 100, maxMs: UInt64 = 5_000, multiplier: Double = 2, jitter: Double = 0.2) {
        self.initialMs = initialMs
        self.maxMs = max(maxMs, 1)
        self.multiplier = max(multiplier, 1)
        self.jitter = min(max(jitter, 0), 1)
    }

    /// The base delay of `attempt` (1 for the first retry) before jitter:
    /// `initialMs × multiplier^(attempt − 1)`, capped at ``maxMs``.
    public func baseDelayMs(attempt: Int) -> UInt64 {
        var delay = Double(min(initialMs, maxMs))
        for _ in 1..<max(attempt, 1) {
            delay *= multiplier
            if delay >= Double(maxMs) { return maxMs }
        }
        return UInt64(delay.rounded())
    }

    /// The delay before `attempt` with jitter applied. `unit` is a random
    /// number in 0..<1: 0.5 gives the base delay, 0 the base minus
    /// ``jitter``, values near 1 the base plus ``jitter``. The result never
    /// exceeds ``maxMs``.
    public func delayMs(attempt: Int, unit: Double) -> UInt64 {
        let base = Double(baseDelayMs(attempt: attempt))
        let spread = jitter * (2 * min(max(unit, 0), 1) - 1)
        let jittered = (base * (1 + spread)).rounded()
        return min(UInt64(max(jittered, 0)), maxMs)
    }

    /// ``delayMs(attempt:unit:)`` with a unit drawn from `generator`.
    public func delayMs<G: RandomNumberGenerator>(attempt: Int, using generator: inout G) -> UInt64 {
        delayMs(attempt: attempt, unit: Double.random(in: 0..<1, using: &generator))
    }
}
