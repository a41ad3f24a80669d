/// A list of countdown timers (`timers/<list>`, domain.md).
///
/// Ids are never reused, even after the highest one is removed: a client that
/// retries `remove {id: 3}` must not hit a newer timer that took the number.
/// So the list remembers ``nextID``. To keep the stored and wire form exactly
/// `{"timers": [...]}` in the usual case, `next_id` is written only when it
/// differs from "highest id + 1", which is also what a decoder assumes when
/// the key is absent.
///
/// A command costs the same on a list of 10,000 timers as on an empty one
/// (issue 12): beside the timers the list keeps runtime indexes (id →
/// position, running deadlines and starts in heaps, session → viewed ids;
/// see `TimerListState+Indexes.swift`). They are derived from the timers,
/// never encoded, rebuilt on decoding, and ignored by `==`.
public struct TimerListState: Sendable, Equatable, Codable {
    /// The list's timers, in the order they were added (the order is on the
    /// wire). Setting this, or changing a timer through it, rebuilds the
    /// indexes: O(n). Commands and events change the timers in place.
    public var timers: [CountdownTimer] {
        get { list }
        set {
            list = newValue
            rebuildIndexes()
        }
    }
    /// The id the next added timer gets; above every id ever used here.
    public var nextID: Int

    /// The timers; changed only together with the indexes below.
    var list: [CountdownTimer]
    /// Timer id → position in ``list``.
    var positions: [Int: Int] = [:]
    /// Deadlines of running countdowns, earliest first (stale ones dropped lazily).
    var deadlines = DueQueue<Moment>()
    /// Starts (`since`) of running countdowns, earliest first (likewise).
    var starts = DueQueue<Moment>()
    /// Session → ids of the timers it started viewing since it came. May
    /// hold ids the session no longer views (it stopped; the timer finished
    /// or was removed): readers check the timer's own `viewerSessions`.
    var viewing: [String: Set<Int>] = [:]

    /// Creates a list with the given timers. `nextID` defaults to the highest
    /// id + 1 (1 for an empty list).
    public init(timers: [CountdownTimer] = [], nextID: Int? = nil) {
        list = timers
        let implied = Self.impliedNextID(timers)
        self.nextID = max(nextID ?? implied, implied)
        rebuildIndexes()
    }

    /// A new list: no timers.
    public static let initial = TimerListState()

    enum CodingKeys: String, CodingKey {
        case timers
        case nextID = "next_id"
    }

    /// Reads `timers` and, when present, `next_id`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let timers = try container.decode([CountdownTimer].self, forKey: .timers)
        self.init(timers: timers, nextID: try container.decodeIfPresent(Int.self, forKey: .nextID))
    }

    /// Writes `timers`, and `next_id` only when it is not implied by them.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(list, forKey: .timers)
        if nextID != Self.impliedNextID(list) {
            try container.encode(nextID, forKey: .nextID)
        }
    }

    /// Same timers (runtime fields included, see ``CountdownTimer``) and the
    /// same `nextID`. The indexes are derived from the timers, so they are
    /// not compared: stale heap entries must not make equal lists unequal.
    public static func == (lhs: TimerListState, rhs: TimerListState) -> Bool {
        lhs.nextID == rhs.nextID && lhs.list == rhs.list
    }

    /// Highest id + 1, or 1 when there are no timers.
    static func impliedNextID(_ timers: [CountdownTimer]) -> Int {
        (timers.map(\.id).max() ?? 0) + 1
    }

    /// The position of the timer with `id`, if any. O(1).
    func index(of id: Int) -> Int? {
        positions[id]
    }

    /// The timers that are counting down. O(n): the scheduler's questions
    /// have O(1) answers in ``nextFinish()`` and ``earliestRunningSince``.
    public var runningTimers: [CountdownTimer] {
        list.filter { $0.status == .running }
    }
}
