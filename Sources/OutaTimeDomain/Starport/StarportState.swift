import Foundation

/// A starport dispatch board (`starport/<board>`, domain.md): the ships sent
/// out from it, oldest first. The catalog and route are reference data and
/// are not part of the state.
///
/// A command costs the same on a board of 10,000 dispatches as on an empty
/// one (issue 12): beside the dispatches the board keeps runtime indexes (id
/// → position, the pending departures and arrivals in a heap; see
/// `StarportState+Indexes.swift`). They are derived from the dispatches,
/// never encoded, rebuilt on decoding, and ignored by `==`.
public struct StarportState: Sendable, Equatable, Codable {
    /// Every dispatch of the board, in the order they were made. Cancelled and
    /// arrived ones stay, so the board shows what happened. Setting this, or
    /// changing a dispatch through it, rebuilds the indexes: O(n). Events
    /// change the board in place.
    public var dispatches: [Dispatch] {
        get { board }
        set {
            board = newValue
            rebuildIndexes()
        }
    }

    /// The dispatches; changed only together with the indexes below.
    var board: [Dispatch]
    /// Dispatch id → position in ``board`` (nothing is ever removed, so
    /// positions never move).
    var positions: [Int: Int] = [:]
    /// `departs_at` and `arrives_at` of each dispatch as dates, by position:
    /// parsed once, not on every look at the schedule.
    var moments: [DispatchMoments] = []
    /// Pending departures and arrivals, earliest first (stale ones dropped lazily).
    var pending = DueQueue<PendingChange>()
    /// The highest id on the board (0 when empty).
    var highestID = 0

    /// Creates a board with the given dispatches.
    public init(dispatches: [Dispatch] = []) {
        board = dispatches
        rebuildIndexes()
    }

    /// A new board: no dispatches.
    public static let initial = StarportState()

    enum CodingKeys: String, CodingKey {
        case dispatches
    }

    /// Reads `dispatches`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(dispatches: try container.decode([Dispatch].self, forKey: .dispatches))
    }

    /// Writes `dispatches`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(board, forKey: .dispatches)
    }

    /// Same dispatches. The indexes are derived from them, so they are not
    /// compared: stale heap entries must not make equal boards unequal.
    public static func == (lhs: StarportState, rhs: StarportState) -> Bool {
        lhs.board == rhs.board
    }
}
