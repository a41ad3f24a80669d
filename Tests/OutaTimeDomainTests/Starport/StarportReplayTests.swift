import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// Event sourcing: a client holding a snapshot and applying the same events
/// reaches the state the server reached by performing.
@Suite struct StarportReplayTests {
    typealias F = StarportFixture

    /// One step of a board's life: an action at a moment, or the scheduler.
    enum Step: Sendable {
        case perform(String, [String: JSONValue], TimeInterval)
        case advance(TimeInterval)
    }

    static let day: [Step] = [
        .perform("dispatch", ["model": .string("SWingV2"), "path": .string("AC"), "note": .string("food")], 0),
        .perform("dispatch", ["model": .string("tEaRdRoP"), "path": .string("e-d-c"), "departs_at": .string("2026-11-22T09:00:00Z")], 10),
        .perform("quote", ["model": .string("SWingV1"), "path": .string("AB")], 20),
        .advance(60),
        .perform("dispatch", ["model": .string("SWingV3"), "path": .string("ABAB")], 120),
        .perform("cancel", ["id": .int(2)], 200),
        .advance(3_600 * 5),
        .perform("cancel", ["id": .int(3)], 3_600 * 5),
        .advance(3_600 * 30),
        .perform("dispatch", ["model": .string("SWingV1"), "path": .string("DE")], 3_600 * 31),
    ]

    /// Runs `steps` from `start`, returning the final board and every event.
    static func run(_ steps: [Step], from start: StarportState) throws -> (StarportState, [(DomainEvent, Date)]) {
        var board = start
        var log: [(DomainEvent, Date)] = []
        for step in steps {
            switch step {
            case .perform(let action, let args, let seconds):
                let outcome = try F.perform(&board, action, args, at: F.at(seconds))
                log += outcome.events.map { ($0, F.at(seconds)) }
            case .advance(let seconds):
                log += board.advance(to: F.at(seconds)).map { ($0, F.at(seconds)) }
            }
        }
        return (board, log)
    }

    /// Snapshot after `split` steps, then the remaining events: same board.
    @Test("snapshot + events == performed state", arguments: Array(0...day.count))
    func replayFromSnapshot(split: Int) throws {
        let (middle, _) = try Self.run(Array(Self.day.prefix(split)), from: .initial)
        let (performed, events) = try Self.run(Array(Self.day.dropFirst(split)), from: middle)
        // The client's copy comes over the wire as a snapshot.
        var replayed = try #require(StarportState(snapshot: middle.snapshot(at: F.morning)))
        for (event, at) in events {
            replayed.apply(event, at: at)
        }
        #expect(replayed == performed)
        #expect(replayed.snapshot(at: F.morning) == performed.snapshot(at: F.morning))
    }

    @Test func theDayHasEveryEvent() throws {
        let (board, events) = try Self.run(Self.day, from: .initial)
        #expect(Set(events.map(\.0.name)) == ["dispatched", "cancelled", "status_changed"])
        #expect(board.dispatches.map(\.status) == [.arrived, .cancelled, .cancelled, .scheduled])
        #expect(board.dispatches.map(\.path) == ["AC", "EDC", "ABAB", "DE"])
    }

    /// The wire snapshot and the stored form (ChannelState's codec) agree,
    /// and the stored text reads back to the same board.
    @Test func snapshotMatchesStoredForm() throws {
        let (board, _) = try Self.run(Self.day, from: .initial)
        let stored = ChannelState.starport(board)
        #expect(stored.json() == board.snapshot(at: F.morning))
        #expect(try ChannelState(kind: .starport, jsonText: stored.jsonText()) == stored)
        #expect(StarportState.initial.snapshot(at: F.morning) == .object(["dispatches": .array([])]))
    }

    @Test func dispatchedIsIdempotent() throws {
        var board = try F.boardWithOneDispatch()
        let event = DomainEvent("dispatched", .object(["dispatch": board.dispatches[0].json]))
        board.apply(event, at: F.morning)
        #expect(board.dispatches.count == 1)
    }

    @Test("unknown or malformed events change nothing", arguments: [
        DomainEvent("teleported", .object(["id": .int(1)])),
        DomainEvent("dispatched", .object(["dispatch": .object(["id": .int(9)])])),
        DomainEvent("cancelled", .object(["id": .int(42)])),
        DomainEvent("cancelled", .object(["id": .string("1")])),
        DomainEvent("status_changed", .object(["id": .int(1), "status": .string("warping")])),
        DomainEvent("status_changed", .null),
    ])
    func ignoredEvents(event: DomainEvent) throws {
        var board = try F.boardWithOneDispatch()
        let before = board
        board.apply(event, at: F.morning)
        #expect(board == before)
    }

    @Test("snapshots that are not a board", arguments: [
        JSONValue.null, .object([:]), .object(["dispatches": .object([:])]),
        .object(["dispatches": .array([.object(["id": .int(1)])])]),
    ])
    func badSnapshots(json: JSONValue) {
        #expect(StarportState(snapshot: json) == nil)
    }
}
