import Foundation
import OutaTimeProtocol

/// Everything that moves a DeLorean: the commands of a `delorean` channel
/// (domain.md, seeds 000 and 001) and the hooks the server's scheduler calls.
///
/// Both only validate and build events; the change itself happens in
/// ``apply(_:at:)``, so a client replaying the same events gets the same car.
extension DeLoreanState: ChannelBehaviour {
    /// `set_destination` and `travel`; both change state, so both need `operate`.
    public static let actions: [String: ActionAccess] = [
        "set_destination": .mutating,
        "travel": .mutating,
    ]

    /// The speed at which the flux capacitor sends the car through time.
    public static let timeTravelSpeedMPH = 88

    /// Performs `set_destination {time}` or `travel {}`; the result of either
    /// is the new snapshot. Arguments other than `time` are ignored.
    public mutating func perform(
        _ action: String, _ args: ActionArgs, _ context: ActionContext
    ) throws(ProtocolError) -> ActionOutcome {
        let events: [DeLoreanEvent]
        switch action {
        case "set_destination": events = try setDestination(args)
        case "travel": events = try travel()
        default: throw Self.unknownAction(action, kind: .delorean)
        }
        // Validation is over: nothing below throws, so a failed action has
        // left the state untouched.
        let applied = record(events)
        return ActionOutcome(reply: self, events: applied)
    }

    /// The state as sent to clients: the state itself. A DeLorean has no
    /// live values between ticks (speed is what the last tick made it), so
    /// `now` is not used.
    public func wireState(at now: Date) -> any Encodable & Sendable { self }

    /// Whether the scheduler should keep calling ``accelerate(at:)``.
    public var isAccelerating: Bool { status == .accelerating }

    /// One acceleration tick (the seed's 0.1 s timer): speed rises by 1 and
    /// `tick` is the broadcast data `{"speed_mph": n}`. The tick that reaches
    /// 88 mph is still returned, together with the `time_travel` event
    /// (already applied: parked, speed 0, old present → last departed,
    /// destination → present). A trip is therefore exactly 88 ticks.
    ///
    /// Call only while ``isAccelerating``; on a parked car this changes
    /// nothing and returns its current speed with no events.
    public mutating func accelerate(at now: Date) -> (tick: JSONValue, events: [DomainEvent]) {
        guard isAccelerating else {
            return (Self.speedTick(speedMPH), [])
        }
        // The speed is a tick-only value: it is set here directly rather than
        // through an event, because domain.md never stores it per tick.
        speedMPH = min(speedMPH + 1, Self.timeTravelSpeedMPH)
        let tick = Self.speedTick(speedMPH)
        guard speedMPH == Self.timeTravelSpeedMPH else { return (tick, []) }
        // An accelerating car always has a destination (`travel` requires
        // one); a state read from elsewhere without one stays in its present.
        let events = record([.timeTravel(lastDeparted: presentTime, presentTime: destinationTime ?? presentTime)])
        return (tick, events)
    }

    /// Called once when the server loads the channel after a restart. Speed
    /// is not stored per tick, so a trip that was under way cannot resume:
    /// the car comes back parked at 0 mph with `acceleration_aborted
    /// {reason: "server_restart"}`. A parked car gives no events.
    public mutating func recoverAfterRestart(at now: Date) -> [DomainEvent] {
        guard isAccelerating else { return [] }
        return record([.accelerationAborted(reason: DeLoreanEvent.serverRestart)])
    }

    /// The argument is checked before the state, so a malformed time is
    /// reported as such even while the car is accelerating.
    private func setDestination(_ args: ActionArgs) throws(ProtocolError) -> [DeLoreanEvent] {
        let time = try args.time("time")
        guard status == .parked else {
            throw ProtocolError(.conflict,
                "cannot set the destination while accelerating (speed \(speedMPH) mph): wait for the trip to end")
        }
        // Normalised to the wire form (UTC, whole seconds), so the stored
        // and displayed destination is exactly what every client shows.
        return [.destinationSet(destinationTime: ISOTime.format(time))]
    }

    private func travel() throws(ProtocolError) -> [DeLoreanEvent] {
        guard destinationTime != nil else {
            throw ProtocolError(.noDestination,
                "cannot travel: no destination time is set; call set_destination {time} first")
        }
        guard status == .parked else {
            throw ProtocolError(.conflict,
                "cannot travel while accelerating (speed \(speedMPH) mph): wait for the trip to end")
        }
        return [.accelerationStarted]
    }

    private static func speedTick(_ mph: Int) -> JSONValue {
        .object(["speed_mph": .int(Int64(mph))])
    }
}
