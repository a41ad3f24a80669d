import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// The server-side moments: `nextStatusChange` and `advance`, restarts included.
@Suite struct StarportScheduleTests {
    typealias F = StarportFixture

    /// `status_changed {id, status, at}` as `advance` emits it.
    static func changed(_ id: Int, _ status: String, _ at: String) -> DomainEvent {
        DomainEvent("status_changed", .object(["id": .int(Int64(id)), "status": .string(status), "at": .string(at)]))
    }

    /// SWingV2 on AC departs 08:00:00 and arrives 15:48:00 (28,080 s later).
    static let departs = "2026-11-22T08:00:00Z"
    static let arrives = "2026-11-22T15:48:00Z"

    @Test func emptyBoardHasNothingPending() {
        var board = StarportState.initial
        #expect(board.nextStatusChange() == nil)
        #expect(board.advance(to: F.at(1_000_000)).isEmpty)
    }

    @Test("advance at each moment", arguments: [
        (-1.0, [String](), Dispatch.Status.scheduled, Optional(departs)),
        (0, ["in_flight"], .inFlight, Optional(arrives)),
        (28_079, ["in_flight"], .inFlight, Optional(arrives)),
        (28_080, ["in_flight", "arrived"], .arrived, nil),
        (90_000, ["in_flight", "arrived"], .arrived, nil),
    ])
    func advanceAt(seconds: TimeInterval, statuses: [String], final: Dispatch.Status, next: String?) throws {
        var board = try F.boardWithOneDispatch()
        #expect(board.nextStatusChange() == ISOTime.parse(Self.departs))
        let events = board.advance(to: F.at(seconds))
        let moments = [Self.departs, Self.arrives]
        #expect(events == statuses.enumerated().map { Self.changed(1, $1, moments[$0]) })
        #expect(board.dispatches.first?.status == final)
        #expect(board.nextStatusChange() == next.flatMap(ISOTime.parse))
        // Nothing is emitted twice.
        #expect(board.advance(to: F.at(seconds)).isEmpty)
    }

    /// The restart case: both moments passed while the server was down; one
    /// `advance` catches up with `in_flight` then `arrived`.
    @Test func bothMomentsPassedAtOnce() throws {
        var board = try F.boardWithOneDispatch()
        let events = board.advance(to: ISOTime.parse("2026-11-23T00:00:00Z")!)
        #expect(events == [Self.changed(1, "in_flight", Self.departs), Self.changed(1, "arrived", Self.arrives)])
        #expect(board.dispatches.first?.status == .arrived)
    }

    /// Several dispatches: events come in time order across dispatches, not
    /// board order; equal moments by id.
    @Test func eventsInTimeOrderAcrossDispatches() throws {
        var board = StarportState.initial
        // 1: departs 10:00, arrives 17:48.  2: departs 08:00, arrives 12:42:22.
        // 3: departs 10:00 as well, arrives 10:00 + ⌈24,000 × 3,600 / 11,000 + 2 × 3,600⌉ s = 14:10:55.
        try F.perform(&board, "dispatch", ["model": .string("SWingV2"), "path": .string("AC"), "departs_at": .string("2026-11-22T10:00:00Z")])
        try F.perform(&board, "dispatch", ["model": .string("SWingV3"), "path": .string("AB")])
        try F.perform(&board, "dispatch", ["model": .string("TearDrop"), "path": .string("AB"), "departs_at": .string("2026-11-22T10:00:00Z")])
        #expect(board.nextStatusChange() == F.morning)
        let events = board.advance(to: F.at(86_400))
        #expect(events == [
            Self.changed(2, "in_flight", "2026-11-22T08:00:00Z"),
            Self.changed(1, "in_flight", "2026-11-22T10:00:00Z"),
            Self.changed(3, "in_flight", "2026-11-22T10:00:00Z"),
            Self.changed(2, "arrived", "2026-11-22T12:42:22Z"),
            Self.changed(3, "arrived", "2026-11-22T14:10:55Z"),
            Self.changed(1, "arrived", "2026-11-22T17:48:00Z"),
        ])
        #expect(board.dispatches.allSatisfy { $0.status == .arrived })
    }

    @Test("nextStatusChange skips cancelled and arrived dispatches", arguments: [
        (Dispatch.Status.cancelled, Optional<String>.none),
        (.arrived, nil),
        (.inFlight, Optional("2026-11-22T15:48:00Z")),
        (.scheduled, Optional("2026-11-22T08:00:00Z")),
    ])
    func nextSkips(status: Dispatch.Status, next: String?) throws {
        var board = try F.boardWithOneDispatch()
        board.dispatches[0].status = status
        #expect(board.nextStatusChange() == next.flatMap(ISOTime.parse))
        if next == nil {
            #expect(board.advance(to: F.at(100_000)).isEmpty)
        }
    }

    @Test func nextStatusChangeIsTheEarliest() throws {
        var board = try F.boardWithOneDispatch()
        try F.perform(&board, "dispatch", ["model": .string("SWingV1"), "path": .string("AB"), "departs_at": .string("2026-11-22T09:00:00Z")])
        _ = board.advance(to: F.at(60))
        // 1 is in flight until 15:48; 2 departs at 09:00.
        #expect(board.nextStatusChange() == ISOTime.parse("2026-11-22T09:00:00Z"))
        _ = board.advance(to: F.at(3_600))
        // 2 arrives at 09:00 + 24,000 × 3,600 / 20,000 + 2 × 14,400 s = 18:12.
        #expect(board.nextStatusChange() == ISOTime.parse(Self.arrives))
    }

    @Test func pastDepartureIsDueAtOnce() throws {
        var board = StarportState.initial
        try F.perform(&board, "dispatch", ["model": .string("SWingV2"), "path": .string("AC"), "departs_at": .string("2026-11-21T08:00:00Z")])
        #expect(board.dispatches.first?.status == .scheduled)
        #expect(board.nextStatusChange()! < F.morning)
        #expect(board.advance(to: F.morning).map(Self.status) == ["in_flight", "arrived"])
    }

    static func status(_ event: DomainEvent) -> String {
        guard case .string(let text)? = StarportFixture.field(event.data, "status") else { return "" }
        return text
    }
}
