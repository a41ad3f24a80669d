import HeapModule

/// The earliest of many pending moments (countdown deadlines, dispatch
/// departures), found without scanning them: a min-heap from which entries
/// are never removed from the middle.
///
/// When a countdown stops or a dispatch is cancelled, its entry stays in the
/// heap and goes stale; the owner alone knows which entries still hold, and
/// passes that test to ``dropStale(keeping:)`` after every change. Stale
/// entries are dropped when they reach the top (O(log n) each), or all at
/// once when the heap has doubled since the last clean-up (O(1) amortised
/// per entry), so the heap stays within twice the number of valid entries
/// plus a small slack.
///
/// Equal entries are duplicates (the same moment of the same thing, pushed
/// twice); the clean-up keeps one of them.
struct DueQueue<Entry: Comparable & Hashable & Sendable>: Sendable {
    private var heap: Heap<Entry>
    /// Size above which the next ``dropStale(keeping:)`` filters the heap.
    private var cleanUpAbove: Int

    /// Fewest entries worth a clean-up: below this a stale entry costs less
    /// than the filtering.
    private static var slack: Int { 64 }

    /// An empty queue.
    init() {
        self.init([Entry]())
    }

    /// A queue holding `entries` (all taken as valid).
    init(_ entries: some Sequence<Entry>) {
        heap = Heap(entries)
        cleanUpAbove = max(Self.slack, 2 * heap.count)
    }

    /// The earliest entry. Valid when the owner called ``dropStale(keeping:)``
    /// after its last change.
    var first: Entry? { heap.min }

    /// Entries held, stale ones included (for tests of the bound).
    var count: Int { heap.count }

    /// Adds a pending moment.
    mutating func insert(_ entry: Entry) {
        heap.insert(entry)
    }

    /// Removes and returns the earliest entry, valid or not.
    @discardableResult
    mutating func removeFirst() -> Entry? {
        heap.popMin()
    }

    /// Drops stale entries from the top, so that ``first`` is valid; filters
    /// the whole heap (and drops duplicates) when it has doubled since the
    /// last time.
    mutating func dropStale(keeping isValid: (Entry) -> Bool) {
        if heap.count > cleanUpAbove {
            var seen = Set<Entry>()
            heap = Heap(heap.unordered.filter { isValid($0) && seen.insert($0).inserted })
            cleanUpAbove = max(Self.slack, 2 * heap.count)
        }
        while let top = heap.min, !isValid(top) {
            heap.removeMin()
        }
    }
}
