/// A starport dispatch board (`starport/<board>`, domain.md): the ships sent
/// out from it, oldest first. The catalog and route are reference data and
/// are not part of the state.
public struct StarportState: Sendable, Equatable, Codable {
    /// Every dispatch of the board, in the order they were made. Cancelled and
    /// arrived ones stay, so the board shows what happened.
    public var dispatches: [Dispatch]

    /// Creates a board with the given dispatches.
    public init(dispatches: [Dispatch] = []) {
        self.dispatches = dispatches
    }

    /// A new board: no dispatches.
    public static let initial = StarportState()

    enum CodingKeys: String, CodingKey {
        case dispatches
    }
}
