/// One ship dispatched on a starport board (domain.md, `starport/<board>`).
///
/// Field names follow the wire contract. Durations are whole seconds and
/// distances whole kilometres, as the `_s` / `_km` suffixes promise; the
/// actions (a later issue) decide the rounding of the Double computation.
public struct Dispatch: Sendable, Equatable, Codable, Identifiable {
    /// Where the dispatch is in its life. Only the server moves it forward,
    /// at `departs_at` and `arrives_at`, or to `cancelled` on request.
    public enum Status: String, Sendable, Equatable, Codable, CaseIterable {
        /// Waiting for `departs_at`.
        case scheduled
        /// Between `departs_at` and `arrives_at`.
        case inFlight = "in_flight"
        /// Reached the last station.
        case arrived
        /// Cancelled before arrival.
        case cancelled
    }

    /// Server-assigned identifier, unique within the board.
    public var id: Int
    /// Ship model as named in the catalog, e.g. `SWingV2`.
    public var model: String
    /// The normalised path, station letters in order, e.g. `ABAB`.
    public var path: String
    /// Sum of the legs' distances.
    public var distanceKM: Int
    /// Flight plus docking time.
    public var durationS: Int
    /// Departure time (ISO 8601).
    public var departsAt: String
    /// `departs_at` + duration (ISO 8601).
    public var arrivesAt: String
    /// Scheduled, in flight, arrived or cancelled.
    public var status: Status
    /// Display name of the operator who dispatched it, if they gave one.
    public var createdBy: String?
    /// Free text from the operator, if any.
    public var note: String?

    /// Creates a dispatch from its fields.
    public init(
        id: Int, model: String, path: String, distanceKM: Int, durationS: Int,
        departsAt: String, arrivesAt: String, status: Status = .scheduled,
        createdBy: String? = nil, note: String? = nil
    ) {
        self.id = id
        self.model = model
        self.path = path
        self.distanceKM = distanceKM
        self.durationS = durationS
        self.departsAt = departsAt
        self.arrivesAt = arrivesAt
        self.status = status
        self.createdBy = createdBy
        self.note = note
    }

    enum CodingKeys: String, CodingKey {
        case id, model, path
        case distanceKM = "distance_km"
        case durationS = "duration_s"
        case departsAt = "departs_at"
        case arrivesAt = "arrives_at"
        case status
        case createdBy = "created_by"
        case note
    }

    /// Written by hand so that `created_by` and `note` appear as `null` when
    /// absent instead of being left out.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(model, forKey: .model)
        try container.encode(path, forKey: .path)
        try container.encode(distanceKM, forKey: .distanceKM)
        try container.encode(durationS, forKey: .durationS)
        try container.encode(departsAt, forKey: .departsAt)
        try container.encode(arrivesAt, forKey: .arrivesAt)
        try container.encode(status, forKey: .status)
        try container.encode(createdBy, forKey: .createdBy)
        try container.encode(note, forKey: .note)
    }
}
