import HeapModule

/// The earliest of many pending moments (countdown deadlines, dispatch
/// departures), found without scanning them: a min-heap from which entries
/// are never removed from the middle.
///
/// When a countdown stops or a dispatch is cancelled, its entry stays in the
/// heap and goes stale. The owner says so (``markStale(_:)``) and, after its
/// change, calls ``dropStale(keeping:)`` with the test of which entries still
/// hold; only then are stale entries dropped from the top (O(log n) each),
/// or all at once when they outnumber the valid ones (O(1) amortised per
/// entry). So the top is always valid, a change that stales nothing costs
/// no test at all, and the heap stays within about twice its valid entries.
///
/// Entries leave the heap only through ``dropStale(keeping:)``: the owner
/// consumes a due entry by making it stale (a finished countdown), which
/// keeps the top valid without a second test.
struct DueQueue<Entry: Comparable & Hashable & Sendable>: Sendable {
    private var heap: Heap<Entry>
    /// Stale entries still in the heap, as counted by ``markStale(_:)``: an
    /// estimate (an entry pushed twice goes stale twice over), used only to
    /// decide when to filter the whole heap.
    private var staleCount = 0
    /// Whether an entry went stale since the last ``dropStale(keeping:)``.
    private var topMayBeStale = false

    /// Stale entries tolerated beside the valid ones before a clean-up:
    /// below this, filtering costs more than the stale entries do.
    private static var slack: Int { 64 }

    /// An empty queue.
    init() {
        self.init([Entry]())
    }

    /// A queue holding `entries` (all taken as valid).
    init(_ entries: some Sequence<Entry>) {
        heap = Heap(entries)
    }

    /// The earliest entry; valid once the owner has dropped stale entries
    /// after its last change.
    var first: Entry? { heap.min }

    /// Entries held, stale ones included (for tests of the bound).
    var count: Int { heap.count }

    /// Adds a pending moment.
    mutating func insert(_ entry: Entry) {
        heap.insert(entry)
    }

    /// Notes that `count` entries went stale.
    mutating func markStale(_ count: Int = 1) {
        staleCount += count
        topMayBeStale = true
    }

    /// After a change that staled entries: drops them from the top, so that
    /// ``first`` is valid, or filters the whole heap (and drops duplicates)
    /// when stale entries outnumber the valid ones.
    mutating func dropStale(keeping isValid: (Entry) -> Bool) {
        guard topMayBeStale else { return }
        topMayBeStale = false
        if staleCount > heap.count - staleCount + Self.slack {
            var seen = Set<Entry>()
            heap = Heap(heap.unordered.filter { isValid($0) && seen.insert($0).inserted })
            staleCount = 0
            return
        }
        while let top = heap.min, !isValid(top) {
            heap.removeMin()
            staleCount = max(0, staleCount - 1)
        }
    }

    /// Removes the earliest entry: only for an owner whose change failed to
    /// stale a due entry, so that a loop over due entries always ends.
    mutating func removeFirst() {
        _ = heap.popMin()
    }
}
