import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// `set_destination` and `travel`: every success path and every error.
@Suite struct DeLoreanActionTests {
    typealias F = DeLoreanFixtures

    @Test func actionsAndAccess() {
        #expect(DeLoreanState.actions == ["set_destination": .mutating, "travel": .mutating])
    }

    /// Any ISO 8601 input is stored in the wire form: UTC, whole seconds.
    static let destinations: [(given: String, stored: String)] = [
        ("1955-11-12T22:04:00Z", "1955-11-12T22:04:00Z"),
        ("1955-11-12T14:04:00-08:00", "1955-11-12T22:04:00Z"),
        ("2015-10-21T16:29:00.750Z", "2015-10-21T16:29:00Z"),
        ("1885-09-02T08:00:00Z", "1885-09-02T08:00:00Z"),
        ("1985-10-26T01:21:00Z", "1985-10-26T01:21:00Z"),
    ]

    @Test("set_destination from any parked state", arguments: destinations, [F.fresh, F.ready, F.arrived])
    func setDestination(destination: (given: String, stored: String), from state: DeLoreanState) throws {
        let (after, outcome) = try F.perform(state, "set_destination", ["time": .string(destination.given)])
        #expect(outcome.events == [
            DomainEvent("destination_set", .object(["destination_time": .string(destination.stored)])),
        ])
        var expected = state
        expected.destinationTime = destination.stored
        #expect(after == expected)
        #expect(outcome.result == after.snapshot(at: F.demoNight))
        #expect(outcome.result == ChannelState.delorean(expected).json())
    }

    @Test("travel from a parked car with a destination", arguments: [F.ready, F.arrived])
    func travel(from state: DeLoreanState) throws {
        let (after, outcome) = try F.perform(state, "travel")
        #expect(outcome.events == [DomainEvent("acceleration_started", .object([:]))])
        #expect(after.status == .accelerating)
        #expect(after.isAccelerating)
        #expect(after.speedMPH == 0)
        #expect(after.presentTime == state.presentTime)
        #expect(after.destinationTime == state.destinationTime)
        #expect(outcome.result == after.snapshot(at: F.demoNight))
    }

    /// One failing command: where it starts, what it sends, what must come back.
    struct Failure: Sendable, CustomTestStringConvertible {
        var testDescription: String
        var state: DeLoreanState
        var action: String
        var args: [String: JSONValue] = [:]
        var code: ErrorCode
        /// Words the message must contain: the bad value and what is allowed.
        var mentions: [String]
    }

    static let failures: [Failure] = [
        Failure(testDescription: "set_destination while accelerating", state: F.accelerating,
                action: "set_destination", args: ["time": .string("2015-10-21T16:29:00Z")],
                code: .conflict, mentions: ["accelerating", "42 mph", "wait"]),
        Failure(testDescription: "set_destination without time", state: F.fresh,
                action: "set_destination", code: .invalidArgs, mentions: ["'time'", "ISO 8601"]),
        Failure(testDescription: "set_destination with null time", state: F.fresh,
                action: "set_destination", args: ["time": .null], code: .invalidArgs, mentions: ["'time'"]),
        Failure(testDescription: "set_destination with words", state: F.fresh,
                action: "set_destination", args: ["time": .string("next tuesday")],
                code: .invalidTime, mentions: ["'next tuesday'", "ISO 8601"]),
        Failure(testDescription: "set_destination without a zone", state: F.fresh,
                action: "set_destination", args: ["time": .string("1955-11-12T22:04:00")],
                code: .invalidTime, mentions: ["'1955-11-12T22:04:00'", "zone"]),
        Failure(testDescription: "set_destination with a date only", state: F.ready,
                action: "set_destination", args: ["time": .string("1955-11-12")],
                code: .invalidTime, mentions: ["'1955-11-12'"]),
        Failure(testDescription: "set_destination with a number", state: F.ready,
                action: "set_destination", args: ["time": .int(1955)],
                code: .invalidTime, mentions: ["1955"]),
        Failure(testDescription: "set_destination with a bad time while accelerating", state: F.accelerating,
                action: "set_destination", args: ["time": .string("yesterday")],
                code: .invalidTime, mentions: ["'yesterday'"]),
        Failure(testDescription: "travel without a destination", state: F.fresh,
                action: "travel", code: .noDestination, mentions: ["no destination", "set_destination"]),
        Failure(testDescription: "travel while accelerating", state: F.accelerating,
                action: "travel", code: .conflict, mentions: ["accelerating", "wait for the trip to end"]),
        Failure(testDescription: "unknown action", state: F.ready,
                action: "fly", code: .unknownAction, mentions: ["'fly'", "set_destination, travel"]),
        Failure(testDescription: "another kind's action", state: F.ready,
                action: "lap", code: .unknownAction, mentions: ["'lap'", "delorean"]),
    ]

    @Test("errors leave the state unchanged", arguments: failures)
    func failure(_ failure: Failure) {
        var state = failure.state
        #expect {
            try state.perform(failure.action, ActionArgs(failure.args), ActionContext(now: F.demoNight))
        } throws: { error in
            guard let error = error as? ProtocolError, error.code == failure.code else { return false }
            return failure.mentions.allSatisfy { error.message.contains($0) }
        }
        #expect(state == failure.state)
    }

    /// Only `time` is read; anything else a client sends is ignored.
    @Test func extraArgumentsAreIgnored() throws {
        let (after, _) = try F.perform(F.fresh, "set_destination",
                                       ["time": .string(F.lightning), "speed": .int(88)])
        #expect(after.destinationTime == F.lightning)
        let (traveling, outcome) = try F.perform(after, "travel", ["now": .bool(true)])
        #expect(traveling.isAccelerating)
        #expect(outcome.events.map(\.name) == ["acceleration_started"])
    }
}
