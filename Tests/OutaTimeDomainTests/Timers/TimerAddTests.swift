import Foundation
@testable import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// `add`: every way to give the remaining time, and every invalid argument.
@Suite struct TimerAddTests {
    typealias F = TimerFixture

    /// A valid `add` and the timer it must produce.
    struct Valid: Sendable, CustomTestStringConvertible {
        let name: String
        let args: [String: JSONValue]
        /// Seconds after t0 at which the action runs.
        let now: Double
        let remaining: Int
        let status: CountdownTimer.Status
        let location: String
        var testDescription: String { name }
    }

    static let valid: [Valid] = [
        Valid(name: "remaining_s", args: ["event": .string("Clock tower"), "location": .string("Hill Valley"), "remaining_s": F.int(90)],
              now: 0, remaining: 90, status: .stopped, location: "Hill Valley"),
        Valid(name: "remaining_s 0 is finished", args: ["event": .string("Now"), "remaining_s": F.int(0)],
              now: 0, remaining: 0, status: .finished, location: ""),
        // The JSON reader makes `5.0` an int; a `.double` (a fraction) is refused.
        Valid(name: "remaining_s written 5.0", args: ["event": .string("E"),
                                                      "remaining_s": (try? JSONValue.parse(Data("5.0".utf8))) ?? .null],
              now: 0, remaining: 5, status: .stopped, location: ""),
        Valid(name: "at in the future", args: ["event": .string("Lightning"), "at": .string("1985-10-26T01:31:00Z")],
              now: 0, remaining: 600, status: .stopped, location: ""),
        Valid(name: "at rounds a fraction up", args: ["event": .string("Lightning"), "at": .string("1985-10-26T01:21:10Z")],
              now: 0.25, remaining: 10, status: .stopped, location: ""),
        Valid(name: "at with a zone offset", args: ["event": .string("E"), "at": .string("1985-10-26T03:22:00+02:00")],
              now: 0, remaining: 60, status: .stopped, location: ""),
        Valid(name: "at in the past is finished", args: ["event": .string("Enchantment"), "at": .string("1955-11-12T22:04:00Z")],
              now: 0, remaining: 0, status: .finished, location: ""),
        Valid(name: "at exactly now is finished", args: ["event": .string("E"), "at": .string("1985-10-26T01:21:00Z")],
              now: 0, remaining: 0, status: .finished, location: ""),
        Valid(name: "null location is the default", args: ["event": .string("E"), "location": .null, "remaining_s": F.int(1)],
              now: 0, remaining: 1, status: .stopped, location: ""),
        Valid(name: "100-character event and location",
              args: ["event": .string(F.text(100)), "location": .string(F.text(100)), "remaining_s": F.int(7)],
              now: 0, remaining: 7, status: .stopped, location: F.text(100)),
        Valid(name: "1-character event, empty location", args: ["event": .string("E"), "location": .string(""), "remaining_s": F.int(3)],
              now: 0, remaining: 3, status: .stopped, location: ""),
    ]

    @Test("add", arguments: valid)
    func add(_ example: Valid) throws {
        var list = TimerListState.initial
        let outcome = try list.perform("add", ActionArgs(example.args), F.context(example.now))
        let timer = try F.timer(1, in: list)
        #expect(timer.remainingS == example.remaining)
        #expect(timer.status == example.status)
        #expect(timer.location == example.location)
        #expect(timer.viewers == 0 && timer.countdown == nil)
        #expect(outcome.result == timer.json(at: F.at(example.now)))
        #expect(outcome.events == [DomainEvent("timer_added", .object(["timer": outcome.result]))])
        #expect(list.nextID == 2)
    }

    @Test func idsRise() throws {
        var list = TimerListState.initial
        for expected in 1...3 {
            let outcome = try list.perform("add", F.args(["event": .string("E"), "remaining_s": F.int(1)]), F.context())
            #expect(F.field(outcome.result, "id") == F.int(expected))
        }
        #expect(list.timers.map(\.id) == [1, 2, 3])
    }

    /// An invalid `add`, its code and a fragment the message must contain.
    struct Invalid: Sendable, CustomTestStringConvertible {
        let name: String
        let args: [String: JSONValue]
        let code: ErrorCode
        let message: String
        var now: Date = TimerFixture.t0
        var testDescription: String { name }
    }

    static let invalid: [Invalid] = [
        Invalid(name: "event missing", args: ["remaining_s": F.int(1)], code: .invalidArgs, message: "'event' is required"),
        Invalid(name: "event empty", args: ["event": .string(""), "remaining_s": F.int(1)], code: .invalidArgs,
                message: "1–100 characters and at most 400 bytes of UTF-8, got 0 characters"),
        Invalid(name: "event 101 characters", args: ["event": .string(F.text(101)), "remaining_s": F.int(1)],
                code: .invalidArgs, message: "1–100 characters and at most 400 bytes of UTF-8, got 101 characters"),
        Invalid(name: "event not a string", args: ["event": F.int(4), "remaining_s": F.int(1)], code: .invalidArgs,
                message: "'event' must be a string"),
        Invalid(name: "location 101 characters",
                args: ["event": .string("E"), "location": .string(F.text(101)), "remaining_s": F.int(1)],
                code: .invalidArgs, message: "0–100 characters and at most 400 bytes of UTF-8, got 101 characters"),
        Invalid(name: "neither remaining_s nor at", args: ["event": .string("E")], code: .invalidArgs, message: "got neither"),
        Invalid(name: "both remaining_s and at", args: ["event": .string("E"), "remaining_s": F.int(5), "at": .string("1985-10-26T01:31:00Z")],
                code: .invalidArgs, message: "not both"),
        Invalid(name: "negative remaining_s", args: ["event": .string("E"), "remaining_s": F.int(-1)], code: .invalidArgs,
                message: "got -1"),
        Invalid(name: "fractional remaining_s", args: ["event": .string("E"), "remaining_s": .double(1.5)], code: .invalidArgs,
                message: "got 1.5"),
        Invalid(name: "remaining_s as a string", args: ["event": .string("E"), "remaining_s": .string("ten")], code: .invalidArgs,
                message: "got 'ten'"),
        Invalid(name: "remaining_s beyond 10,000 years",
                args: ["event": .string("E"), "remaining_s": F.int(TimerListState.maxRemainingS + 1)],
                code: .invalidArgs, message: "0…315576000000"),
        Invalid(name: "at not ISO 8601", args: ["event": .string("E"), "at": .string("next Tuesday")], code: .invalidTime,
                message: "'next Tuesday'"),
        Invalid(name: "at without a zone", args: ["event": .string("E"), "at": .string("1985-10-26T01:31:00")], code: .invalidTime,
                message: "the zone designator is missing"),
        Invalid(name: "at as a number", args: ["event": .string("E"), "at": F.int(499_137_660)], code: .invalidTime,
                message: "got 499137660"),
        Invalid(name: "at beyond 10,000 years ahead", args: ["event": .string("E"), "at": .string("9999-12-31T23:59:59Z")],
                code: .invalidArgs, message: "10,000 years",
                now: Date(timeIntervalSinceReferenceDate: -1e12)),
    ]

    @Test("add rejects", arguments: invalid)
    func rejects(_ example: Invalid) throws {
        var list = try F.mixedList()
        let before = list
        let error = try #require(throws: ProtocolError.self) {
            try list.perform("add", ActionArgs(example.args), ActionContext(now: example.now))
        }
        #expect(error.code == example.code)
        #expect(error.message.contains(example.message), "message: \(error.message)")
        #expect(list == before)
    }
}
