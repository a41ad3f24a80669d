import Histogram
import Synchronization

/// What every scenario's worker reports besides its own counters: failures
/// (with the first reason) and its latency histogram once it finishes.
/// Readable from the coordinating thread.
///
/// `@unchecked Sendable` because the class is not final (each scenario's
/// tally extends it); every stored property is an atomic or a mutex.
class WorkerTally: @unchecked Sendable {
    /// Connection failures, refused requests and error pushes.
    let errors = Atomic<Int>(0)
    private let firstErrorText = Mutex<String?>(nil)
    private let latency = Mutex<Histogram<UInt64>?>(nil)

    /// Counts a failure and keeps the first reason for the report.
    func recordError(_ reason: String) {
        errors.add(1, ordering: .relaxed)
        firstErrorText.withLock { if $0 == nil { $0 = reason } }
    }

    /// The first failure's reason, if any.
    var firstError: String? { firstErrorText.withLock { $0 } }

    /// Hands over the worker's latency histogram when it finishes.
    func storeLatency(_ histogram: Histogram<UInt64>) { latency.withLock { $0 = histogram } }

    /// The worker's latency histogram, once it has finished.
    var finalLatency: Histogram<UInt64>? { latency.withLock { $0 } }

    /// Every finished worker's histogram added into one.
    static func mergedLatency(_ tallies: [WorkerTally]) -> Histogram<UInt64> {
        var merged = Histogram<UInt64>.microseconds()
        for tally in tallies { if let part = tally.finalLatency { merged.add(part) } }
        return merged
    }
}

extension Histogram where Count == UInt64 {
    /// A histogram of microseconds from 1 µs to an hour, 3 significant digits:
    /// the one every worker records into and every report merges.
    static func microseconds() -> Self {
        Histogram(lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: .three)
    }
}
