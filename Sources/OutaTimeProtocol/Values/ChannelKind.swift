/// The four channel kinds of the contract (§4). A channel is named
/// `<kind>/<name>`; the kind decides its state and actions.
public enum ChannelKind: String, Sendable, Codable, CaseIterable, Hashable {
    /// DeLorean time circuits.
    case delorean
    /// Starport dispatch board.
    case starport
    /// A list of event countdown timers.
    case timers
    /// A jogging lap stopwatch.
    case laps

    /// The valid kinds, for error messages: `delorean, starport, timers, laps`.
    public static let allowedList = allCases.map(\.rawValue).joined(separator: ", ")
}
