import Foundation
@testable import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// `update` and `remove` on a list with one timer in each status (1 stopped
/// at 600 s, 2 running from 300 s at t0 with one viewer, 3 finished).
@Suite struct TimerUpdateTests {
    typealias F = TimerFixture

    /// An update, when it happens, and what the timer must look like after.
    struct Update: Sendable, CustomTestStringConvertible {
        let name: String
        let id: Int
        let args: [String: JSONValue]
        let now: Double
        let fields: [String]
        let status: CountdownTimer.Status
        let remaining: Int
        let viewers: Int
        /// Where a running timer must now finish (seconds after t0).
        var deadline: Double?
        var testDescription: String { name }
    }

    static let updates: [Update] = [
        Update(name: "stopped: event", id: 1, args: ["event": .string("Lightning")], now: 5,
               fields: ["event"], status: .stopped, remaining: 600, viewers: 0),
        Update(name: "stopped: empty location", id: 1, args: ["location": .string("")], now: 5,
               fields: ["location"], status: .stopped, remaining: 600, viewers: 0),
        Update(name: "stopped: all three", id: 1,
               args: ["event": .string("E"), "location": .string("L"), "remaining_s": F.int(30)], now: 5,
               fields: ["event", "location", "remaining_s"], status: .stopped, remaining: 30, viewers: 0),
        Update(name: "stopped: remaining_s 0 finishes", id: 1, args: ["remaining_s": F.int(0)], now: 5,
               fields: ["remaining_s"], status: .finished, remaining: 0, viewers: 0),
        Update(name: "stopped: at", id: 1, args: ["at": .string("1985-10-26T01:22:00Z")], now: 5,
               fields: ["remaining_s"], status: .stopped, remaining: 55, viewers: 0),
        Update(name: "running: event keeps the countdown", id: 2, args: ["event": .string("Dance")], now: 10.5,
               fields: ["event"], status: .running, remaining: 290, viewers: 1, deadline: 300),
        Update(name: "running: remaining_s restarts it", id: 2, args: ["remaining_s": F.int(60)], now: 10.5,
               fields: ["remaining_s"], status: .running, remaining: 60, viewers: 1, deadline: 70.5),
        Update(name: "running: remaining_s 0 finishes it", id: 2, args: ["remaining_s": F.int(0)], now: 10.5,
               fields: ["remaining_s"], status: .finished, remaining: 0, viewers: 0),
        Update(name: "running: past at finishes it", id: 2, args: ["at": .string("1985-10-26T01:00:00Z")], now: 10.5,
               fields: ["remaining_s"], status: .finished, remaining: 0, viewers: 0),
        Update(name: "finished: remaining_s makes it stopped", id: 3, args: ["remaining_s": F.int(45)], now: 5,
               fields: ["remaining_s"], status: .stopped, remaining: 45, viewers: 0),
        Update(name: "finished: event only stays finished", id: 3, args: ["event": .string("Again")], now: 5,
               fields: ["event"], status: .finished, remaining: 0, viewers: 0),
    ]

    @Test("update", arguments: updates)
    func update(_ example: Update) throws {
        var list = try F.mixedList()
        let others = list.timers.filter { $0.id != example.id }
        var args = example.args
        args["id"] = F.int(example.id)
        let outcome = try list.perform("update", ActionArgs(args), F.context(example.now))
        let timer = try F.timer(example.id, in: list)
        let now = F.at(example.now)
        #expect(timer.status == example.status)
        #expect(timer.remaining(at: now) == example.remaining)
        #expect(timer.viewers == example.viewers && timer.viewerSessions.count == example.viewers)
        #expect(timer.deadline == example.deadline.map(F.at))
        #expect(outcome.result == timer.json(at: now))
        let expectedEvent = DomainEvent("timer_updated", .object([
            "timer": timer.json(at: now), "fields": .array(example.fields.map(JSONValue.string)),
        ]))
        #expect(outcome.events == [expectedEvent])
        #expect(list.timers.filter { $0.id != example.id } == others, "other timers untouched")
        if case .string(let event)? = example.args["event"] { #expect(timer.event == event) }
        if case .string(let location)? = example.args["location"] { #expect(timer.location == location) }
    }

    static let invalid: [(String, [String: JSONValue], ErrorCode, String)] = [
        ("unknown id", ["id": F.int(99), "event": .string("E")], .notFound, "no timer with id 99 on this list; ids here: 1, 2, 3"),
        ("id missing", ["event": .string("E")], .invalidArgs, "'id' is required"),
        ("id 0", ["id": F.int(0), "event": .string("E")], .invalidArgs, "≥ 1, got 0"),
        ("id a string", ["id": .string("1"), "event": .string("E")], .invalidArgs, "got '1'"),
        ("nothing to update", ["id": F.int(1)], .invalidArgs, "at least one of 'event', 'location', 'remaining_s' or 'at'"),
        ("event empty", ["id": F.int(1), "event": .string("")], .invalidArgs, "1–100 characters"),
        ("event 101 characters", ["id": F.int(1), "event": .string(F.text(101))], .invalidArgs, "got 101 characters"),
        ("location 101 characters", ["id": F.int(1), "location": .string(F.text(101))], .invalidArgs, "0–100"),
        ("negative remaining_s", ["id": F.int(1), "remaining_s": F.int(-5)], .invalidArgs, "got -5"),
        ("both remaining_s and at", ["id": F.int(1), "remaining_s": F.int(5), "at": .string("1985-10-26T01:31:00Z")],
         .invalidArgs, "not both"),
        ("bad at", ["id": F.int(1), "at": .string("1985-13-45")], .invalidTime, "'1985-13-45'"),
    ]

    @Test("update rejects", arguments: invalid)
    func rejects(name: String, args: [String: JSONValue], code: ErrorCode, message: String) throws {
        var list = try F.mixedList()
        let before = list
        let error = try #require(throws: ProtocolError.self) {
            try list.perform("update", ActionArgs(args), F.context(3))
        }
        #expect(error.code == code)
        #expect(error.message.contains(message), "\(name): \(error.message)")
        #expect(list == before)
    }

    @Test("remove", arguments: [1, 2, 3])
    func remove(id: Int) throws {
        var list = try F.mixedList()
        let outcome = try list.perform("remove", F.args(["id": F.int(id)]), F.context(8))
        #expect(outcome.result == .object(["id": F.int(id)]))
        #expect(outcome.events == [DomainEvent("timer_removed", .object(["id": F.int(id)]))])
        #expect(list.timers.map(\.id) == [1, 2, 3].filter { $0 != id })
        #expect(list.nextFinish() == (id == 2 ? nil : F.at(300)))
        #expect(list.nextID == 4)
    }

    @Test("remove rejects", arguments: [
        (["id": F.int(7)], ErrorCode.notFound, "no timer with id 7"),
        ([:], .invalidArgs, "'id' is required"),
        (["id": F.int(-3)], .invalidArgs, "got -3"),
    ] as [([String: JSONValue], ErrorCode, String)])
    func removeRejects(args: [String: JSONValue], code: ErrorCode, message: String) throws {
        var list = try F.mixedList()
        let before = list
        let error = try #require(throws: ProtocolError.self) {
            try list.perform("remove", ActionArgs(args), F.context())
        }
        #expect(error.code == code)
        #expect(error.message.contains(message), "\(error.message)")
        #expect(list == before)
    }

    @Test func removedIDsAreNotReused() throws {
        var list = try F.mixedList()
        _ = try list.perform("remove", F.args(["id": F.int(3)]), F.context())
        #expect(F.field(list.snapshot(at: F.t0), "next_id") == F.int(4), "next_id written when not implied")
        let reloaded = try F.decode(list.snapshot(at: F.t0))
        #expect(reloaded.nextID == 4)
        var again = reloaded
        let outcome = try again.perform("add", F.args(["event": .string("New"), "remaining_s": F.int(1)]), F.context())
        #expect(F.field(outcome.result, "id") == F.int(4))
        #expect(F.field(again.snapshot(at: F.t0), "next_id") == nil, "implied again: not written")
    }

    @Test func emptyListSaysSo() throws {
        var list = TimerListState.initial
        let error = try #require(throws: ProtocolError.self) {
            try list.perform("remove", F.args(["id": F.int(1)]), F.context())
        }
        #expect(error.message == "no timer with id 1 on this list; the list is empty")
    }

    @Test func unknownAction() throws {
        var list = try F.mixedList()
        let before = list
        let error = try #require(throws: ProtocolError.self) {
            try list.perform("pause", F.args([:]), F.context())
        }
        #expect(error.code == .unknownAction)
        #expect(error.message.contains("'pause'") && error.message.contains("add, remove, start, stop, update"))
        #expect(list == before)
    }

    @Test func everyActionMutates() {
        #expect(TimerListState.actions == [
            "add": .mutating, "update": .mutating, "remove": .mutating, "start": .mutating, "stop": .mutating,
        ])
    }
}
