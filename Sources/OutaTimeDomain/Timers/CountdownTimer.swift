/// One event countdown on a timer list (domain.md, `timers/<list>`).
///
/// `viewers` is how many sessions have the countdown on screen. The sessions
/// themselves are server runtime state, not domain state: no viewer survives a
/// restart, so after loading, the server resets the count to 0.
public struct CountdownTimer: Sendable, Equatable, Codable, Identifiable {
    /// Whether the countdown is moving.
    public enum Status: String, Sendable, Equatable, Codable, CaseIterable {
        /// Paused: nobody is viewing it, or it was never started.
        case stopped
        /// At least one viewer; `remaining_s` falls by 1 per second.
        case running
        /// Reached 0; cannot be started again.
        case finished
    }

    /// Server-assigned identifier, unique within the list.
    public var id: Int
    /// What is being counted down to (1–100 characters).
    public var event: String
    /// Where it happens (0–100 characters).
    public var location: String
    /// Seconds left, as of the snapshot.
    public var remainingS: Int
    /// Stopped, running or finished.
    public var status: Status
    /// Number of sessions currently viewing the countdown.
    public var viewers: Int

    /// Creates a timer from its fields.
    public init(
        id: Int, event: String, location: String, remainingS: Int,
        status: Status = .stopped, viewers: Int = 0
    ) {
        self.id = id
        self.event = event
        self.location = location
        self.remainingS = remainingS
        self.status = status
        self.viewers = viewers
    }

    enum CodingKeys: String, CodingKey {
        case id, event, location
        case remainingS = "remaining_s"
        case status, viewers
    }
}
