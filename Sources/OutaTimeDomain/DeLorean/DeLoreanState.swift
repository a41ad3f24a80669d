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

/// How the time circuits read out, for clients that render a DeLorean
/// (seed 000: the date formatter and the "% MPH" speed label).
extension DeLoreanState {
    /// The seed's date format, `MMM dd yyyy hh:mm a`, upper-cased.
    public static let displayFormat = "MMM dd yyyy hh:mm a"

    /// A wire time as the time circuits show it, in UTC:
    /// `1985-10-26T01:21:00Z` → `OCT 26 1985 01:21 AM`. Text that is not an
    /// ISO 8601 time is returned unchanged, so a client never shows a blank
    /// readout for a value it cannot parse.
    public static func display(_ iso: String) -> String {
        guard let date = ISOTime.parse(iso) else { return iso }
        // A formatter per call: DateFormatter is not Sendable, and this is a
        // client-side helper, not a hot path. en_US_POSIX pins the English
        // month names and AM/PM whatever the machine's locale.
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.calendar = Calendar(identifier: .gregorian)
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = displayFormat
        return formatter.string(from: date).uppercased()
    }

    /// A speed as the seed's label shows it: `88` → `88 MPH`.
    public static func displaySpeed(_ mph: Int) -> String {
        "\(mph) MPH"
    }
}
