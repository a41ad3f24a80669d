import Histogram
import Synchronization

/// What one commands worker has seen so far, readable from the coordinating
/// thread (relaxed atomics: counters read for progress and at the end).
final class CommandsTally: Sendable {
    /// Clients on this worker (fixed at start).
    let clientCount: Int
    /// Clients whose `hello` was answered.
    let ready = Atomic<Int>(0)
    /// Commands written to the server.
    let sent = Atomic<Int>(0)
    /// Commands answered `ok`.
    let acknowledged = Atomic<Int>(0)
    /// Monotonic time of the last acknowledgement, ns.
    let lastAckNs = Atomic<UInt64>(0)
    /// Error replies, error pushes and disconnects.
    let errors = Atomic<Int>(0)
    private let firstErrorText = Mutex<String?>(nil)
    private let latency = Mutex<Histogram<UInt64>?>(nil)

    init(clientCount: Int) { self.clientCount = clientCount }

    /// Counts a failure and keeps the first reason for the report.
    func recordError(_ reason: String) {
        errors.add(1, ordering: .relaxed)
        firstErrorText.withLock { if $0 == nil { $0 = reason } }
    }

    var firstError: String? { firstErrorText.withLock { $0 } }

    func storeLatency(_ histogram: Histogram<UInt64>) { latency.withLock { $0 = histogram } }

    var finalLatency: Histogram<UInt64>? { latency.withLock { $0 } }
}

/// The run-wide command budget shared by every worker (`--commands`).
final class CommandBudget: Sendable {
    /// Total commands allowed, or nil for no limit (then `--duration` bounds the run).
    let limit: Int?
    private let claimed = Atomic<Int>(0)

    init(limit: Int?) { self.limit = limit }

    /// Claims one command; false once the budget is spent.
    func claim() -> Bool {
        guard let limit else { return true }
        return claimed.wrappingAdd(1, ordering: .relaxed).newValue <= limit
    }
}
