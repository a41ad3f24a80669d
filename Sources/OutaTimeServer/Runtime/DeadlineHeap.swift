import HeapModule

/// A min-heap of (deadline, key) pairs with one live deadline per key, on
/// swift-collections' `Heap`: rescheduling a key makes its older entries
/// stale, and stale entries are skipped when they reach the top (lazy
/// deletion keeps every operation O(log n) without an index into the heap).
struct DeadlineHeap<Key: Hashable> {
    private struct Entry: Comparable {
        var deadline: UInt64
        /// Scheduling order: equal deadlines wake first come, first served;
        /// also the entry's generation, live while `live[key]` equals it.
        var order: UInt64
        var key: Key

        static func < (a: Entry, b: Entry) -> Bool {
            a.deadline != b.deadline ? a.deadline < b.deadline : a.order < b.order
        }

        static func == (a: Entry, b: Entry) -> Bool {
            a.deadline == b.deadline && a.order == b.order
        }
    }

    private var entries = Heap<Entry>()
    private var live: [Key: UInt64] = [:]
    private var nextOrder: UInt64 = 0

    /// Keys with a live deadline.
    var count: Int { live.count }

    /// Sets `key`'s deadline, replacing any earlier one.
    mutating func schedule(_ key: Key, at deadline: UInt64) {
        nextOrder += 1
        live[key] = nextOrder
        entries.insert(Entry(deadline: deadline, order: nextOrder, key: key))
    }

    /// Removes `key`'s deadline, if any.
    mutating func cancel(_ key: Key) {
        live[key] = nil
    }

    /// True when `key` has a live deadline.
    func isScheduled(_ key: Key) -> Bool { live[key] != nil }

    /// The earliest live deadline.
    mutating func earliest() -> UInt64? {
        dropStale()
        return entries.min?.deadline
    }

    /// Removes and returns the earliest key whose deadline is ≤ `now`.
    mutating func popDue(now: UInt64) -> Key? {
        dropStale()
        guard let top = entries.min, top.deadline <= now else { return nil }
        entries.removeMin()
        live[top.key] = nil
        return top.key
    }

    private mutating func dropStale() {
        while let top = entries.min, live[top.key] != top.order {
            entries.removeMin()
        }
        // Many cancellations leave garbage below the top: rebuild when it dominates.
        if entries.count > 64 && entries.count > 4 * live.count {
            let live = self.live
            entries = Heap(entries.unordered.filter { live[$0.key] == $0.order })
        }
    }
}
