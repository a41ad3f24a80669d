/// A list of countdown timers (`timers/<list>`, domain.md).
///
/// Ids are never reused, even after the highest one is removed: a client that
/// retries `remove {id: 3}` must not hit a newer timer that took the number.
/// So the list remembers ``nextID``. To keep the stored and wire form exactly
/// `{"timers": [...]}` in the usual case, `next_id` is written only when it
/// differs from "highest id + 1", which is also what a decoder assumes when
/// the key is absent.
public struct TimerListState: Sendable, Equatable, Codable {
    /// The list's timers, in the order they were added.
    public var timers: [CountdownTimer]
    /// The id the next added timer gets; above every id ever used here.
    public var nextID: Int

    /// Creates a list with the given timers. `nextID` defaults to the highest
    /// id + 1 (1 for an empty list).
    public init(timers: [CountdownTimer] = [], nextID: Int? = nil) {
        self.timers = timers
        let implied = Self.impliedNextID(timers)
        self.nextID = max(nextID ?? implied, implied)
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
        try container.encode(timers, forKey: .timers)
        if nextID != Self.impliedNextID(timers) {
            try container.encode(nextID, forKey: .nextID)
        }
    }

    /// Highest id + 1, or 1 when there are no timers.
    static func impliedNextID(_ timers: [CountdownTimer]) -> Int {
        (timers.map(\.id).max() ?? 0) + 1
    }

    /// The index of the timer with `id`, if any.
    func index(of id: Int) -> Int? {
        timers.firstIndex { $0.id == id }
    }

    /// The timers that are counting down.
    public var runningTimers: [CountdownTimer] {
        timers.filter { $0.status == .running }
    }
}
