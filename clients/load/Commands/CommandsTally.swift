import Histogram
import Synchronization

/// What one commands worker has seen so far, readable from the coordinating
/// thread (relaxed atomics: counters read for progress and at the end).
final class CommandsTally: WorkerTally, @unchecked Sendable {
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

    /// Preload commands answered `ok` (not in `acknowledged`).
    let preloaded = Atomic<Int>(0)
    /// Monotonic time the first client began its preload, and the last one
    /// finished it, ns (0: none yet). Written by the worker's thread only.
    let preloadStartNs = Atomic<UInt64>(0)
    let preloadEndNs = Atomic<UInt64>(0)

    init(clientCount: Int) { self.clientCount = clientCount }

    /// A client began its preload at `ns` (worker thread only).
    func notePreloadStart(_ ns: UInt64) {
        let first = preloadStartNs.load(ordering: .relaxed)
        if first == 0 || ns < first { preloadStartNs.store(ns, ordering: .relaxed) }
    }

    /// A client finished its preload at `ns` (worker thread only).
    func notePreloadEnd(_ ns: UInt64) {
        if ns > preloadEndNs.load(ordering: .relaxed) { preloadEndNs.store(ns, ordering: .relaxed) }
    }
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
