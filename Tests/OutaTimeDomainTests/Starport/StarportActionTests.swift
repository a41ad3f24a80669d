import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// The `starport` actions through `perform`, with a fixed clock.
@Suite struct StarportActionTests {
    typealias F = StarportFixture

    @Test func actionsAndAccess() {
        #expect(StarportState.actions == [
            "catalog": .readOnly, "quote": .readOnly, "dispatch": .mutating, "cancel": .mutating,
        ])
    }

    @Test func catalogShape() throws {
        var board = StarportState.initial
        let outcome = try F.perform(&board, "catalog")
        #expect(outcome.events.isEmpty)
        #expect(F.keys(outcome.result) == ["ships", "stations"])
        let ships = F.elements(F.field(outcome.result, "ships"))
        #expect(ships.count == 4)
        #expect(ships.allSatisfy { F.keys($0) == ["model", "speed_kmh", "docking_s"] })
        #expect(ships.first == .object(["model": .string("SWingV1"), "speed_kmh": .int(20_000), "docking_s": .int(14_400)]))
        let stations = F.elements(F.field(outcome.result, "stations"))
        #expect(stations.map { F.field($0, "name") } == ["A", "B", "C", "D", "E"].map(JSONValue.string))
        #expect(stations.map { F.field($0, "position_km") } == [0, 24_000, 70_000, 295_000, 332_000].map(JSONValue.int))
    }

    @Test func quoteIsReadOnly() throws {
        var board = try F.boardWithOneDispatch()
        let before = board
        let outcome = try F.perform(&board, "quote", ["model": .string("swingv2"), "path": .string("a-c")])
        #expect(outcome.events.isEmpty)
        #expect(board == before)
        #expect(outcome.result == (try Starport.quote(model: "SWingV2", path: "AC")).json)
    }

    @Test func dispatchDefaultsToNow() throws {
        var board = StarportState.initial
        let outcome = try F.perform(&board, "dispatch", ["model": .string("SWingV2"), "path": .string("AC")])
        let expected = Dispatch(id: 1, model: "SWingV2", path: "AC", distanceKM: 70_000, durationS: 28_080,
                                departsAt: "2026-11-22T08:00:00Z", arrivesAt: "2026-11-22T15:48:00Z",
                                status: .scheduled, createdBy: "Marty", note: nil)
        #expect(board.dispatches == [expected])
        #expect(outcome.result == expected.json)
        #expect(outcome.events == [DomainEvent("dispatched", .object(["dispatch": expected.json]))])
    }

    @Test("departs_at is cut to the whole second; arrives_at = departs_at + duration_s", arguments: [
        ("2026-11-23T06:30:00Z", "2026-11-23T06:30:00Z", "2026-11-23T14:18:00Z"),
        ("2026-11-23T06:30:00.999Z", "2026-11-23T06:30:00Z", "2026-11-23T14:18:00Z"),
        ("2026-11-23T08:30:00+02:00", "2026-11-23T06:30:00Z", "2026-11-23T14:18:00Z"),
        ("2026-11-21T23:00:00Z", "2026-11-21T23:00:00Z", "2026-11-22T06:48:00Z"),
    ])
    func departsAt(given: String, departs: String, arrives: String) throws {
        var board = StarportState.initial
        try F.perform(&board, "dispatch", ["model": .string("SWingV2"), "path": .string("AC"), "departs_at": .string(given)])
        #expect(board.dispatches.first?.departsAt == departs)
        #expect(board.dispatches.first?.arrivesAt == arrives)
        #expect(board.dispatches.first?.status == .scheduled)
    }

    @Test func fractionalNowIsCutToo() throws {
        var board = StarportState.initial
        try F.perform(&board, "dispatch", ["model": .string("SWingV3"), "path": .string("AB")], at: F.at(0.75))
        let dispatch = try #require(board.dispatches.first)
        #expect(dispatch.departsAt == "2026-11-22T08:00:00Z")
        // 16,941.18 s rounded up: 4 h 42 min 22 s.
        #expect(dispatch.durationS == 16_942)
        #expect(dispatch.arrivesAt == "2026-11-22T12:42:22Z")
    }

    @Test func idsKeepRising() throws {
        var board = StarportState.initial
        var ids: [JSONValue?] = []
        for path in ["AB", "BC", "CD"] {
            let outcome = try F.perform(&board, "dispatch", ["model": .string("TearDrop"), "path": .string(path)])
            ids.append(F.field(outcome.result, "id"))
        }
        // Cancelled dispatches stay on the board and keep their ids.
        try F.perform(&board, "cancel", ["id": .int(3)])
        let fourth = try F.perform(&board, "dispatch", ["model": .string("TearDrop"), "path": .string("DE")])
        ids.append(F.field(fourth.result, "id"))
        #expect(ids == [1, 2, 3, 4].map(JSONValue.int))
        #expect(board.dispatches.map(\.id) == [1, 2, 3, 4])
        // A board read back from storage goes on from its highest id.
        var restored = try #require(StarportState(snapshot: StarportState(dispatches: [board.dispatches[3]]).snapshot(at: F.morning)))
        try F.perform(&restored, "dispatch", ["model": .string("TearDrop"), "path": .string("ED")])
        #expect(restored.dispatches.map(\.id) == [4, 5])
    }

    @Test("created_by is the acting operator", arguments: [("Marty", JSONValue.string("Marty")), ("", .null)])
    func createdBy(actor: String, expected: JSONValue) throws {
        var board = StarportState.initial
        let outcome = try F.perform(&board, "dispatch", ["model": .string("SWingV1"), "path": .string("AB")], actor: actor)
        #expect(F.field(outcome.result, "created_by") == expected)
    }

    @Test("note of 0–100 characters", arguments: [
        (JSONValue.null, JSONValue.null), (.string(""), .string("")),
        (.string(String(repeating: "é", count: 100)), .string(String(repeating: "é", count: 100))),
    ])
    func note(given: JSONValue, stored: JSONValue) throws {
        var board = StarportState.initial
        let outcome = try F.perform(&board, "dispatch", ["model": .string("SWingV1"), "path": .string("AB"), "note": given])
        #expect(F.field(outcome.result, "note") == stored)
    }

    @Test("cancel a scheduled or in-flight dispatch", arguments: [0.0, 3_600.0, 28_079.0])
    func cancel(after seconds: TimeInterval) throws {
        var board = try F.boardWithOneDispatch()
        _ = board.advance(to: F.at(seconds))
        let outcome = try F.perform(&board, "cancel", ["id": .int(1)], at: F.at(seconds))
        #expect(outcome.events == [DomainEvent("cancelled", .object(["id": .int(1)]))])
        #expect(board.dispatches.first?.status == .cancelled)
        #expect(outcome.result == board.dispatches.first?.json)
        #expect(board.nextStatusChange() == nil)
    }

    @Test("cancel refusals", arguments: [
        (Dispatch.Status.arrived, 30_000.0, ErrorCode.conflict, "arrived"),
        (.cancelled, 0, .conflict, "already cancelled"),
        // Stored as in flight, but the arrival time has passed: it has landed.
        (.inFlight, 28_080, .conflict, "arrived"),
    ])
    func cancelRefused(status: Dispatch.Status, after seconds: TimeInterval, code: ErrorCode, fragment: String) throws {
        var board = try F.boardWithOneDispatch()
        board.dispatches[0].status = status
        let error = F.failure(board, "cancel", ["id": .int(1)], at: F.at(seconds))
        #expect(error?.code == code)
        #expect(error?.message.contains(fragment) == true)
        #expect(error?.message.contains("dispatch 1") == true)
    }

    @Test func cancelUnknownID() throws {
        let error = F.failure(try F.boardWithOneDispatch(), "cancel", ["id": .int(7)])
        #expect(error == ProtocolError(.notFound, "no dispatch with id 7 on this board; known ids: 1"))
        #expect(F.failure(.initial, "cancel", ["id": .int(1)])?.message.contains("no dispatches") == true)
    }

    /// Every refusal of bad arguments, with the field it names.
    @Test("bad arguments", arguments: [
        ("quote", [:], ErrorCode.invalidArgs, "'model'"),
        ("quote", ["model": JSONValue.string("SWingV2")], .invalidArgs, "'path'"),
        ("quote", ["model": .int(2), "path": .string("AC")], .invalidArgs, "'model'"),
        ("quote", ["model": .string("SWingV2"), "path": .array([.string("A"), .string("C")])], .invalidArgs, "'path'"),
        ("quote", ["model": .string("SWingV2"), "path": .string("AC"), "ship": .string("x")], .invalidArgs, "'ship'"),
        ("catalog", ["verbose": .bool(true)], .invalidArgs, "no arguments"),
        ("dispatch", ["path": .string("AC")], .invalidArgs, "'model'"),
        ("dispatch", ["model": .string("SWingV2"), "path": .string("AC"), "departs_at": .string("tomorrow")], .invalidTime, "departs_at"),
        ("dispatch", ["model": .string("SWingV2"), "path": .string("AC"), "departs_at": .int(0)], .invalidTime, "departs_at"),
        ("dispatch", ["model": .string("SWingV2"), "path": .string("AC"), "note": .string(String(repeating: "x", count: 101))], .invalidArgs, "0–100"),
        ("dispatch", ["model": .string("SWingV2"), "path": .string("AC"), "note": .int(5)], .invalidArgs, "'note'"),
        ("dispatch", ["model": .string("SWingV2"), "path": .string("AC"), "departs": .string("2026-11-23T06:30:00Z")], .invalidArgs, "departs_at"),
        ("dispatch", ["model": .string("Delorean"), "path": .string("AC")], .unknownModel, "TearDrop"),
        ("dispatch", ["model": .string("SWingV2"), "path": .string("AA")], .invalidPath, "position 2"),
        ("cancel", [:], .invalidArgs, "'id'"),
        ("cancel", ["id": .string("1")], .invalidArgs, "'id'"),
        ("cancel", ["id": .int(0)], .invalidArgs, "≥ 1"),
        ("cancel", ["id": .double(1.5)], .invalidArgs, "'id'"),
        ("launch", [:], .unknownAction, "'launch'"),
    ] as [(String, [String: JSONValue], ErrorCode, String)])
    func badArguments(action: String, args: [String: JSONValue], code: ErrorCode, fragment: String) throws {
        let error = F.failure(try F.boardWithOneDispatch(), action, args)
        #expect(error?.code == code)
        #expect(error?.message.contains(fragment) == true, "\(error?.message ?? "no error")")
    }
}
