import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// The scheduler's side: acceleration ticks, the jump at 88 mph, restarts.
@Suite struct DeLoreanTripTests {
    typealias F = DeLoreanFixtures

    /// Trips of the films: (present, destination).
    static let trips: [(present: String, destination: String)] = [
        ("1985-10-26T01:21:00Z", "1955-11-12T22:04:00Z"),
        ("1955-11-12T22:04:00Z", "1985-10-26T01:24:00Z"),
        ("1985-10-26T11:00:00Z", "2015-10-21T16:29:00Z"),
        ("1955-11-12T22:04:00Z", "1885-09-02T08:00:00Z"),
    ]

    @Test("a whole trip: 88 rising ticks, then time_travel", arguments: trips)
    func wholeTrip(trip: (present: String, destination: String)) throws {
        let start = ISOTime.parse(trip.present)!
        var car = DeLoreanState.initial(now: start)
        (car, _) = try F.perform(car, "set_destination", ["time": .string(trip.destination)], at: start)
        (car, _) = try F.perform(car, "travel", at: start)

        let (speeds, events) = F.accelerate(&car, ticks: 88, from: start)
        #expect(speeds == Array(1...88))
        #expect(zip(speeds, speeds.dropFirst()).allSatisfy { $0 < $1 })
        #expect(events == [DomainEvent("time_travel", .object([
            "last_departed": .string(trip.present),
            "present_time": .string(trip.destination),
            "speed_mph": .int(0),
        ]))])
        #expect(car == DeLoreanState(presentTime: trip.destination, destinationTime: trip.destination,
                                     lastDeparted: trip.present, speedMPH: 0, status: .parked))
        #expect(!car.isAccelerating)
    }

    /// Only the 88th tick ends the trip; every earlier one just adds 1 mph.
    @Test("ticks before 88 carry no events", arguments: [1, 42, 87])
    func partialTrip(ticks: Int) throws {
        var (car, _) = try F.perform(F.ready, "travel")
        let (speeds, events) = F.accelerate(&car, ticks: ticks)
        #expect(speeds.last == ticks)
        #expect(events.isEmpty)
        #expect(car.isAccelerating)
        #expect(car.speedMPH == ticks)
        #expect(car.snapshot(at: F.demoNight) == ChannelState.delorean(car).json())
    }

    @Test func theTimeTravelTickReportsEightyEight() throws {
        var car = F.accelerating
        car.speedMPH = 87
        let (tick, events) = car.accelerate(at: F.demoNight)
        #expect(tick == .object(["speed_mph": .int(88)]))
        #expect(events.map(\.name) == ["time_travel"])
        #expect(car.speedMPH == 0)
    }

    @Test("a parked car ignores stray ticks", arguments: [F.fresh, F.ready, F.arrived])
    func strayTick(state: DeLoreanState) {
        var car = state
        let (tick, events) = car.accelerate(at: F.demoNight)
        #expect(tick == .object(["speed_mph": .int(0)]))
        #expect(events.isEmpty)
        #expect(car == state)
    }

    /// Back from 1955 and off again: the second trip departs from the first's destination.
    @Test func secondTrip() throws {
        var car = F.arrived
        (car, _) = try F.perform(car, "set_destination", ["time": .string("1985-10-26T01:24:00Z")])
        (car, _) = try F.perform(car, "travel")
        let (_, events) = F.accelerate(&car, ticks: 88)
        #expect(events == [DomainEvent("time_travel", .object([
            "last_departed": .string(F.lightning),
            "present_time": .string("1985-10-26T01:24:00Z"),
            "speed_mph": .int(0),
        ]))])
        #expect(car.lastDeparted == F.lightning)
    }

    /// The destination stays set, so the same trip can be repeated at once.
    @Test func travelAgainWithoutANewDestination() throws {
        let (car, outcome) = try F.perform(F.arrived, "travel")
        #expect(outcome.events.map(\.name) == ["acceleration_started"])
        #expect(car.destinationTime == F.lightning)
    }

    static let restarts: [(before: DeLoreanState, events: [DomainEvent], after: DeLoreanState)] = [
        (F.accelerating, [DomainEvent("acceleration_aborted", .object(["reason": .string("server_restart")]))],
         DeLoreanState(presentTime: "1985-10-26T01:21:00Z", destinationTime: F.lightning)),
        (DeLoreanState(presentTime: F.lightning, destinationTime: "1985-10-26T01:24:00Z",
                       lastDeparted: "1985-10-26T01:21:00Z", speedMPH: 0, status: .accelerating),
         [DomainEvent("acceleration_aborted", .object(["reason": .string("server_restart")]))],
         DeLoreanState(presentTime: F.lightning, destinationTime: "1985-10-26T01:24:00Z",
                       lastDeparted: "1985-10-26T01:21:00Z")),
        (F.fresh, [], F.fresh),
        (F.ready, [], F.ready),
        (F.arrived, [], F.arrived),
    ]

    @Test("after a restart an accelerating car is parked at 0 mph", arguments: restarts)
    func recoverAfterRestart(restart: (before: DeLoreanState, events: [DomainEvent], after: DeLoreanState)) {
        var car = restart.before
        #expect(car.recoverAfterRestart(at: F.demoNight) == restart.events)
        #expect(car == restart.after)
        // A second call (a second restart) finds nothing more to do.
        #expect(car.recoverAfterRestart(at: F.demoNight).isEmpty)
    }

    @Test("the stored form round-trips at every stage of a trip", arguments: [0, 1, 42, 87, 88])
    func storedForm(ticks: Int) throws {
        var (car, _) = try F.perform(F.ready, "travel")
        if ticks > 0 { _ = F.accelerate(&car, ticks: ticks) }
        let text = ChannelState.delorean(car).jsonText()
        #expect(try ChannelState(kind: .delorean, jsonText: text) == .delorean(car))
    }
}
