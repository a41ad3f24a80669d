import Foundation
import OutaTimeProtocol

/// Where the domain reads "now". The kinds never call `Date()` themselves, so
/// tests can pin time (`ManualClock`) and the server can pass one clock to
/// every channel.
public protocol DomainClock: Sendable {
    /// The current wall-clock time.
    var now: Date { get }
}

/// The real wall clock, for the running server.
public struct SystemClock: DomainClock {
    /// Creates the system clock.
    public init() {}

    /// `Date()`, read on every access.
    public var now: Date { Date() }
}

/// A clock that only moves when told to, for deterministic tests.
///
/// It is a class so that one instance can be shared between the code under
/// test and the test that moves it. A lock (rather than `Synchronization.Mutex`)
/// keeps it usable with the package's macOS 14 deployment target.
public final class ManualClock: DomainClock, @unchecked Sendable {
    private let lock = NSLock()
    private var current: Date

    /// Creates a clock that reads `now` until it is set or advanced.
    public init(_ now: Date) {
        current = now
    }

    /// Creates a clock at an ISO 8601 time such as `1985-10-26T01:21:00Z`.
    /// Returns nil when the text does not parse.
    public convenience init?(iso: String) {
        guard let date = ISOTime.parse(iso) else { return nil }
        self.init(date)
    }

    /// The clock's time; setting it jumps there (backwards too).
    public var now: Date {
        get { lock.withLock { current } }
        set { lock.withLock { current = newValue } }
    }

    /// Moves the clock forward by `seconds` (negative moves it back).
    public func advance(by seconds: TimeInterval) {
        lock.withLock { current += seconds }
    }
}
