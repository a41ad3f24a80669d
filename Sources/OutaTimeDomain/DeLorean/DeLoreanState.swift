import Foundation
import OutaTimeProtocol

/// The time circuits of one DeLorean (`delorean/<car>`, domain.md).
///
/// Times are kept as the ISO 8601 text that goes on the wire, not as `Date`,
/// so that a state read back from storage is equal to the one written: a
/// `Date` would carry sub-second digits that the wire format drops.
public struct DeLoreanState: Sendable, Equatable, Codable {
    /// Whether the car is standing or running up to 88 mph.
    public enum Status: String, Sendable, Equatable, Codable, CaseIterable {
        /// Standing still; destination may be set and `travel` accepted.
        case parked
        /// Gaining 1 mph per tick until 88 mph.
        case accelerating
    }

    /// The car's present time (ISO 8601).
    public var presentTime: String
    /// Where the car will go (ISO 8601), or nil before `set_destination`.
    public var destinationTime: String?
    /// The present time the car last left (ISO 8601), nil before its first trip.
    public var lastDeparted: String?
    /// Speed in mph, 0…88.
    public var speedMPH: Int
    /// Parked or accelerating.
    public var status: Status

    /// Creates a state from its fields.
    public init(
        presentTime: String,
        destinationTime: String? = nil,
        lastDeparted: String? = nil,
        speedMPH: Int = 0,
        status: Status = .parked
    ) {
        self.presentTime = presentTime
        self.destinationTime = destinationTime
        self.lastDeparted = lastDeparted
        self.speedMPH = speedMPH
        self.status = status
    }

    /// A parked car whose present time is the server's time at creation.
    public static func initial(now: Date) -> DeLoreanState {
        DeLoreanState(presentTime: ISOTime.format(now))
    }

    enum CodingKeys: String, CodingKey {
        case presentTime = "present_time"
        case destinationTime = "destination_time"
        case lastDeparted = "last_departed"
        case speedMPH = "speed_mph"
        case status
    }

    /// Written by hand so that nil times appear as explicit `null`s: clients
    /// rely on every key being present (synthesized Codable omits nils).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(presentTime, forKey: .presentTime)
        try container.encode(destinationTime, forKey: .destinationTime)
        try container.encode(lastDeparted, forKey: .lastDeparted)
        try container.encode(speedMPH, forKey: .speedMPH)
        try container.encode(status, forKey: .status)
    }
}
