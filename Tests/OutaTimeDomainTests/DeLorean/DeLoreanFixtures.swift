import Foundation
import OutaTimeDomain
import OutaTimeProtocol

/// Fixed moments and states shared by the DeLorean suites.
enum DeLoreanFixtures {
    /// The night Doc Brown first demonstrated the time machine.
    static let demoNight = ISOTime.parse("1985-10-26T01:21:00Z")!
    /// The night lightning struck the clock tower.
    static let lightning = "1955-11-12T22:04:00Z"

    /// A fresh car: parked, no destination.
    static let fresh = DeLoreanState.initial(now: demoNight)
    /// Parked with a destination entered.
    static let ready = DeLoreanState(presentTime: "1985-10-26T01:21:00Z", destinationTime: lightning)
    /// Parked in 1955 after a trip, destination still set.
    static let arrived = DeLoreanState(
        presentTime: lightning, destinationTime: lightning, lastDeparted: "1985-10-26T01:21:00Z")
    /// Half-way up to 88 mph.
    static let accelerating = DeLoreanState(
        presentTime: "1985-10-26T01:21:00Z", destinationTime: lightning, speedMPH: 42, status: .accelerating)

    /// One command on a copy of `state`; the copy after it and the outcome.
    static func perform(
        _ state: DeLoreanState, _ action: String, _ args: [String: JSONValue] = [:], at now: Date = demoNight
    ) throws(ProtocolError) -> (DeLoreanState, ActionOutcome) {
        var copy = state
        let outcome = try copy.perform(action, ActionArgs(args), ActionContext(now: now))
        return (copy, outcome)
    }

    /// The speeds of `count` ticks, and every event they produced.
    static func accelerate(_ state: inout DeLoreanState, ticks count: Int, from now: Date = demoNight)
        -> (speeds: [Int], events: [DomainEvent]) {
        var speeds: [Int] = []
        var events: [DomainEvent] = []
        for index in 1...count {
            // 100 ms apart, the default tick interval; the domain ignores it.
            let (tick, produced) = state.accelerate(at: now.addingTimeInterval(Double(index) / 10))
            if case .object(let fields) = tick, case .int(let speed)? = fields["speed_mph"] {
                speeds.append(Int(speed))
            }
            events += produced
        }
        return (speeds, events)
    }
}
