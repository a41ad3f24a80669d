/// A list of countdown timers (`timers/<list>`, domain.md).
public struct TimerListState: Sendable, Equatable, Codable {
    /// The list's timers, in the order they were added.
    public var timers: [CountdownTimer]

    /// Creates a list with the given timers.
    public init(timers: [CountdownTimer] = []) {
        self.timers = timers
    }

    /// A new list: no timers.
    public static let initial = TimerListState()

    enum CodingKeys: String, CodingKey {
        case timers
    }
}
