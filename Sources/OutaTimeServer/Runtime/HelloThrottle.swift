/// How long a `hello` waits for its answer, from the recent failed
/// `hello`s of its client address and of the token it presents
/// (`--max-failed-hellos`). Pure: loop times come from the caller.
///
/// No `hello` is ever refused for others' failures: a valid token is always
/// accepted, at most ``maxDelayMs`` late. Clients behind one NAT or balancer
/// share an address, so a lockout by address would let any of them lock out
/// all the others, again and again.
///
/// - Up to ``freeFailures`` failures in a window (per address, per token),
///   a failure is answered ``baseDelayMs`` late and a success at once.
/// - Beyond that the key is throttled: every `hello` counted against it,
///   valid or not, is answered `baseDelayMs × 2^(failures − freeFailures)`
///   late, at most ``maxDelayMs``. Successes wait too, and exactly as long
///   as failures: were a valid token answered at once, a guesser could stop
///   waiting for any answer after a few milliseconds and take silence for
///   "wrong", and the delay would cost it nothing.
///
/// The delay is decided before the token is checked and counted after, so
/// both outcomes of one `hello` wait the same. It bounds the guesses per
/// connection; guesses in parallel are bounded by
/// `--max-connections-per-address` (each waits on its own connection).
struct HelloThrottle {
    /// Failures per client address.
    private(set) var addresses: FailureCounts<String>
    /// Failures per presented token (its SHA-256 digest).
    private(set) var tokens: FailureCounts<[UInt8]>
    /// Failures per window before a key is throttled; 0: never throttled.
    let freeFailures: Int
    /// A failure's delay while not throttled, and the first throttled delay.
    let baseDelayMs: UInt64
    /// The longest delay (a valid token's worst wait).
    let maxDelayMs: UInt64

    /// Keys tracked per table; beyond that, new keys share one entry
    /// (``FailureCounts``). 65,536 entries are a few MiB at most.
    static let capacity = 65_536

    init(freeFailures: Int, baseDelayMs: Int, maxDelayMs: Int, windowMs: Int, capacity: Int = Self.capacity) {
        self.freeFailures = freeFailures
        self.baseDelayMs = UInt64(max(0, baseDelayMs))
        self.maxDelayMs = UInt64(max(0, maxDelayMs))
        addresses = FailureCounts(windowMs: UInt64(windowMs), capacity: capacity)
        tokens = FailureCounts(windowMs: UInt64(windowMs), capacity: capacity)
    }

    /// The failures that count for a `hello` from `address` presenting the
    /// token with `digest` at `now`: the larger of the two.
    func failures(address: String?, token digest: [UInt8]?, now: UInt64) -> Int {
        max(address.map { addresses.failures(of: $0, now: now) } ?? 0,
            digest.map { tokens.failures(of: $0, now: now) } ?? 0)
    }

    /// Whether `failures` throttle every `hello` counted against them.
    func isThrottled(_ failures: Int) -> Bool {
        freeFailures > 0 && failures >= freeFailures
    }

    /// Milliseconds a `hello` with `failures` before it waits for its answer:
    /// the same for a success and a failure once throttled.
    func delayMs(failures: Int, succeeded: Bool) -> UInt64 {
        guard isThrottled(failures) else { return succeeded ? 0 : baseDelayMs }
        let doublings = min(failures - freeFailures, 32)
        let delay = baseDelayMs.multipliedReportingOverflow(by: 1 << UInt64(doublings))
        return delay.overflow ? maxDelayMs : min(maxDelayMs, delay.partialValue)
    }

    /// Records a failed `hello` from `address` presenting `digest`.
    mutating func failed(address: String?, token digest: [UInt8]?, now: UInt64) {
        if let address { addresses.failed(address, now: now) }
        if let digest { tokens.failed(digest, now: now) }
    }

    /// Forgets ended windows (from the server's sweep).
    mutating func forgetExpired(now: UInt64) {
        addresses.forgetExpired(now: now)
        tokens.forgetExpired(now: now)
    }
}
