import Dispatch
import Synchronization

/// Collects values handed over on other threads (libnats callbacks) and
/// lets a test wait, bounded, for a number of them.
public final class Collector<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])
    private let arrived = DispatchSemaphore(value: 0)

    /// An empty collector.
    public init() {}

    /// Adds a value (call from any thread).
    public func add(_ value: Value) {
        values.withLock { $0.append(value) }
        arrived.signal()
    }

    /// Waits until `count` values arrived or `timeout` passed; returns all
    /// values so far (fewer than `count` on a timeout).
    public func wait(for count: Int, timeout: Duration = .seconds(5)) -> [Value] {
        let deadline = DispatchTime.now() + .milliseconds(Int(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000))
        while self.count < count {
            if arrived.wait(timeout: deadline) == .timedOut { break }
        }
        return snapshot
    }

    /// The values so far.
    public var snapshot: [Value] { values.withLock { $0 } }

    /// How many values arrived.
    public var count: Int { values.withLock { $0.count } }
}
