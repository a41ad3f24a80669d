import Foundation
import OutaTimeProtocol

/// The durable events of a `delorean` channel, typed.
///
/// `perform`, `accelerate` and `recoverAfterRestart` build these, and
/// ``DeLoreanState/apply(_:at:)`` reads them back from ``DomainEvent``s, so
/// the wire names and data keys are written in exactly one place.
enum DeLoreanEvent: Sendable, Equatable, JSONPayload {
    /// `destination_set {destination_time}`.
    case destinationSet(destinationTime: String)
    /// `acceleration_started {}`: the car leaves the kerb at 0 mph.
    case accelerationStarted
    /// `time_travel {last_departed, present_time, speed_mph: 0}`: 88 mph reached.
    case timeTravel(lastDeparted: String, presentTime: String)
    /// `acceleration_aborted {reason}`: the trip was cut short (a server restart).
    case accelerationAborted(reason: String)

    /// The reason written when a restart finds the car accelerating.
    static let serverRestart = "server_restart"

    /// The event's name on the wire.
    var name: String {
        switch self {
        case .destinationSet: "destination_set"
        case .accelerationStarted: "acceleration_started"
        case .timeTravel: "time_travel"
        case .accelerationAborted: "acceleration_aborted"
        }
    }

    /// The event, its data encoded once.
    var domainEvent: DomainEvent { DomainEvent(name, encoding: self) }

    /// Reads a wire event; nil for a name this kind does not have or data
    /// missing a key that `apply` needs.
    init?(_ event: DomainEvent) {
        switch event.name {
        case "destination_set":
            guard let destination = Self.string(event.data, "destination_time") else { return nil }
            self = .destinationSet(destinationTime: destination)
        case "acceleration_started":
            self = .accelerationStarted
        case "time_travel":
            guard let lastDeparted = Self.string(event.data, "last_departed"),
                  let presentTime = Self.string(event.data, "present_time") else { return nil }
            self = .timeTravel(lastDeparted: lastDeparted, presentTime: presentTime)
        case "acceleration_aborted":
            self = .accelerationAborted(reason: Self.string(event.data, "reason") ?? Self.serverRestart)
        default:
            return nil
        }
    }

    private static func string(_ data: JSONValue, _ key: String) -> String? {
        guard case .object(let fields) = data, case .string(let text)? = fields[key] else { return nil }
        return text
    }
}

extension DeLoreanEvent {
    /// The data object, as `init?(_:)` reads it.
    func writeFields(to fields: inout JSONFields) {
        switch self {
        case .destinationSet(let destination):
            fields.write("destination_time", destination)
        case .accelerationStarted:
            break
        case .timeTravel(let lastDeparted, let presentTime):
            fields.write("last_departed", lastDeparted)
            fields.write("present_time", presentTime)
            fields.write("speed_mph", 0)
        case .accelerationAborted(let reason):
            fields.write("reason", reason)
        }
    }
}

extension DeLoreanState {
    /// Applies one durable event. Every durable change of a DeLorean goes
    /// through here, on the server and in a client replaying `history`, so
    /// both reach the same state. (Speed ticks are not events: they change
    /// only `speed_mph`, which is never stored per tick.)
    ///
    /// An event this kind does not know, or one without the data it needs,
    /// leaves the state unchanged rather than trapping: a replaying reader
    /// must survive an event written by a newer server. `at` is unused (every
    /// event carries its own times) and kept for the uniform kind API.
    public mutating func apply(_ event: DomainEvent, at: Date) {
        guard let event = DeLoreanEvent(event) else { return }
        apply(event)
    }

    /// Applies a typed event.
    mutating func apply(_ event: DeLoreanEvent) {
        switch event {
        case .destinationSet(let destination):
            destinationTime = destination
        case .accelerationStarted:
            status = .accelerating
            speedMPH = 0
        case .timeTravel(let lastDeparted, let presentTime):
            // The destination stays set, as on the seed's time circuits: the
            // same trip can be taken again without re-entering it.
            self.lastDeparted = lastDeparted
            self.presentTime = presentTime
            speedMPH = 0
            status = .parked
        case .accelerationAborted:
            speedMPH = 0
            status = .parked
        }
    }

    /// Applies `events` in order and returns them, for `perform` and the hooks.
    mutating func record(_ events: [DeLoreanEvent]) -> [DomainEvent] {
        events.map { event in
            apply(event)
            return event.domainEvent
        }
    }
}
