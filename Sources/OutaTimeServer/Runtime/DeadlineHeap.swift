/// A binary min-heap of (deadline, key) pairs with one live deadline per
/// key: rescheduling a key makes its older entries stale, and stale entries
/// are skipped when they reach the top (lazy deletion keeps every operation
/// O(log n) without an index).
struct DeadlineHeap<Key: Hashable> {
    private struct Entry {
        var deadline: UInt64
        var order: UInt64
        var key: Key
        var generation: UInt64
    }

    private var entries: [Entry] = []
    private var live: [Key: UInt64] = [:]
    private var nextOrder: UInt64 = 0

    /// Keys with a live deadline.
    var count: Int { live.count }

    /// Sets `key`'s deadline, replacing any earlier one.
    mutating func schedule(_ key: Key, at deadline: UInt64) {
        nextOrder += 1
        live[key] = nextOrder
        entries.append(Entry(deadline: deadline, order: nextOrder, key: key, generation: nextOrder))
        siftUp(entries.count - 1)
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
        return entries.first?.deadline
    }

    /// Removes and returns the earliest key whose deadline is ≤ `now`.
    mutating func popDue(now: UInt64) -> Key? {
        dropStale()
        guard let top = entries.first, top.deadline <= now else { return nil }
        removeTop()
        live[top.key] = nil
        return top.key
    }

    private mutating func dropStale() {
        while let top = entries.first, live[top.key] != top.generation {
            removeTop()
        }
        // Many cancellations leave garbage below the top: rebuild when it dominates.
        if entries.count > 64 && entries.count > 4 * live.count {
            entries.removeAll { live[$0.key] != $0.generation }
            for index in stride(from: entries.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
        }
    }

    private mutating func removeTop() {
        let last = entries.removeLast()
        guard !entries.isEmpty else { return }
        entries[0] = last
        siftDown(0)
    }

    private func less(_ a: Int, _ b: Int) -> Bool {
        let x = entries[a], y = entries[b]
        return x.deadline != y.deadline ? x.deadline < y.deadline : x.order < y.order
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard less(child, parent) else { return }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < entries.count && less(left, smallest) { smallest = left }
            if right < entries.count && less(right, smallest) { smallest = right }
            guard smallest != parent else { return }
            entries.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
