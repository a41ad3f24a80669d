import Foundation
import OutaTimeProtocol

/// One ship dispatched on a starport board (domain.md, `starport/<board>`).
///
/// Field names follow the wire contract. Distances are whole kilometres (the
/// line's gaps are), and `duration_s` is the quote's exact duration rounded
/// up to a whole second, so that `arrives_at` − `departs_at` = `duration_s`
/// exactly on the wire and a ship never shows as arrived early. The exact
/// figures stay available from the read-only `quote` action.
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
    /// Flight plus docking time, whole seconds rounded up.
    public var durationS: Int
    /// Departure time (ISO 8601, whole seconds).
    public var departsAt: String
    /// `departs_at` + duration (ISO 8601).
    public var arrivesAt: String
    /// Scheduled, in flight, arrived or cancelled.
    public var status: Status
    /// Display name of the operator who dispatched it; nil when the session
    /// had no name.
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

extension Dispatch: JSONWritable {
    /// The fields of `encode(to:)`, in its order, written directly.
    public func writeFields(to fields: inout JSONFields) {
        fields.write("id", id)
        fields.write("model", model)
        fields.write("path", path)
        fields.write("distance_km", distanceKM)
        fields.write("duration_s", durationS)
        fields.write("departs_at", departsAt)
        fields.write("arrives_at", arrivesAt)
        fields.write("status", status.rawValue)
        fields.write("created_by", createdBy)
        fields.write("note", note)
    }
}

/// Making a dispatch from a quote, and its JSON form for events and
/// snapshots (the same keys and nulls as the Codable form above).
extension Dispatch {
    /// Builds a scheduled dispatch from a quote. `departsAt` is cut to the
    /// whole second (the wire has no fractions) before `arrives_at` is
    /// computed, so `arrives_at` − `departs_at` = `duration_s` exactly.
    public init(id: Int, quote: Starport.Quote, departsAt: Date, createdBy: String?, note: String?) {
        let departure = Date(timeIntervalSince1970: departsAt.timeIntervalSince1970.rounded(.down))
        let duration = quote.wholeDurationS
        self.init(
            id: id, model: quote.model, path: quote.path,
            distanceKM: quote.distanceKM, durationS: duration,
            departsAt: ISOTime.format(departure),
            arrivesAt: ISOTime.format(departure.addingTimeInterval(TimeInterval(duration))),
            status: .scheduled, createdBy: createdBy, note: note)
    }

    /// The dispatch as a JSON object, every domain.md key present (`null`
    /// for a missing `created_by` or `note`): its ``writeFields(to:)`` read back.
    public var json: JSONValue {
        guard let value = try? RawJSON(encoding: self).value() else {
            preconditionFailure("a dispatch did not encode as JSON")
        }
        return value
    }

    /// Reads a dispatch from its JSON object (as written by ``json``); nil
    /// when a required key is missing or has the wrong type.
    public init?(json: JSONValue) {
        guard case .object(let fields) = json,
              case .int(let id)? = fields["id"], let id = Int(exactly: id),
              case .string(let model)? = fields["model"],
              case .string(let path)? = fields["path"],
              case .int(let distance)? = fields["distance_km"], let distance = Int(exactly: distance),
              case .int(let duration)? = fields["duration_s"], let duration = Int(exactly: duration),
              case .string(let departsAt)? = fields["departs_at"],
              case .string(let arrivesAt)? = fields["arrives_at"],
              case .string(let statusText)? = fields["status"], let status = Status(rawValue: statusText)
        else { return nil }
        func optionalText(_ key: String) -> String? {
            if case .string(let text)? = fields[key] { return text }
            return nil
        }
        self.init(id: id, model: model, path: path, distanceKM: distance, durationS: duration,
                  departsAt: departsAt, arrivesAt: arrivesAt, status: status,
                  createdBy: optionalText("created_by"), note: optionalText("note"))
    }
}
