import Foundation
@testable import OutaTimeDomain
import OutaTimeProtocol
import OutaTimeTestKit
import Testing

/// The runtime indexes of a board (issue 12) answer exactly what a pass over
/// every dispatch answered: checked against such passes after every step of
/// random runs, and through decoding, replacing `dispatches` and equality.
@Suite struct StarportIndexTests {
    typealias F = StarportFixture

    static let models = ["SWingV1", "SWingV2", "SWingV3", "TearDrop"]
    static let paths = ["AC", "AB", "ABAB", "EDC", "DE", "BA", "ACE"]

    /// `nextStatusChange()` as a pass over the board.
    static func scannedNext(_ board: StarportState) -> Date? {
        board.dispatches.compactMap { $0.pendingChanges.first?.at }.min()
    }

    /// `advance(to:)` as a pass over the board: every change due, by time,
    /// id, departure first.
    static func scannedAdvance(_ board: StarportState, to now: Date) -> [DomainEvent] {
        board.dispatches
            .flatMap(\.pendingChanges)
            .filter { $0.at <= now }
            .sorted { ($0.at, $0.id, $0.status == .arrived ? 1 : 0) < ($1.at, $1.id, $1.status == .arrived ? 1 : 0) }
            .map { change in
                DomainEvent("status_changed", .object([
                    "id": .int(Int64(change.id)), "status": .string(change.status.rawValue),
                    "at": .string(ISOTime.format(change.at)),
                ]))
            }
    }

    /// A dispatch (departing from an hour ago to five hours ahead, or now)
    /// or a cancel of a random id, sometimes a missing one.
    static func randomCommand(on board: StarportState, now: Date,
                              using random: inout SeededGenerator) -> (String, [String: JSONValue]) {
        if Int.random(in: 0..<100, using: &random) < 60 || board.dispatches.isEmpty {
            var args: [String: JSONValue] = [
                "model": .string(models.randomElement(using: &random)!),
                "path": .string(paths.randomElement(using: &random)!),
            ]
            if Bool.random(using: &random) {
                let offset = Double(Int.random(in: -3_600...18_000, using: &random))
                args["departs_at"] = .string(ISOTime.format(now.addingTimeInterval(offset)))
            }
            if Bool.random(using: &random) { args["note"] = .string("run \(board.nextID)") }
            return ("dispatch", args)
        }
        let id = Int.random(in: 0..<8, using: &random) == 0 ? board.nextID : board.dispatches.randomElement(using: &random)!.id
        return ("cancel", ["id": .int(Int64(id))])
    }

    static func expectMatchesScan(_ board: StarportState, _ comment: String,
                                  sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(board.nextStatusChange() == scannedNext(board), "\(comment)", sourceLocation: sourceLocation)
        #expect(board.nextID == (board.dispatches.map(\.id).max() ?? 0) + 1, "\(comment)", sourceLocation: sourceLocation)
        for (position, dispatch) in board.dispatches.enumerated() {
            #expect(board.positions[dispatch.id] == position, "\(comment)", sourceLocation: sourceLocation)
        }
        let pending = board.dispatches.reduce(0) { $0 + $1.pendingChanges.count }
        #expect(board.pending.count <= 2 * pending + 64, "\(comment)", sourceLocation: sourceLocation)
    }

    @Test("indexes = scans over random runs", arguments: [21, 22, 23] as [UInt64])
    func randomRun(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let clock = ManualClock(F.morning)
        var board = StarportState.initial
        var changes = 0, cancels = 0
        for step in 0..<400 {
            clock.advance(by: random.step(maxMS: 1_500_000))
            let now = clock.now
            let expected = Self.scannedAdvance(board, to: now)
            let events = board.advance(to: now)
            #expect(events == expected, "seed \(seed) step \(step): advance")
            changes += events.count
            let (action, args) = Self.randomCommand(on: board, now: now, using: &random)
            if let outcome = try? board.perform(action, ActionArgs(args), F.context(now)), action == "cancel" {
                cancels += outcome.events.count
            }
            Self.expectMatchesScan(board, "seed \(seed) step \(step)")
        }
        #expect(changes > 0 && cancels > 0)
    }

    @Test func decodingAndSettingDispatchesRebuildTheIndexes() throws {
        var board = StarportState.initial
        for hour in [5, 1, 3] {
            try F.perform(&board, "dispatch", ["model": .string("SWingV2"), "path": .string("AC"),
                                               "departs_at": .string(ISOTime.format(F.at(Double(hour) * 3_600)))])
        }
        var decoded = try #require(StarportState(snapshot: board.snapshot(at: F.morning)))
        #expect(decoded == board)
        Self.expectMatchesScan(decoded, "decoded")
        #expect(decoded.nextStatusChange() == F.at(3_600))
        decoded.dispatches[1].status = .cancelled
        Self.expectMatchesScan(decoded, "after a change through `dispatches`")
        #expect(decoded.nextStatusChange() == F.at(3 * 3_600))
        try F.perform(&decoded, "dispatch", ["model": .string("TearDrop"), "path": .string("AB")], at: F.at(60))
        #expect(decoded.dispatches.map(\.id) == [1, 2, 3, 4])
        #expect(decoded.nextStatusChange() == F.at(60))
    }

    @Test func equalityIgnoresTheIndexes() throws {
        let plain = try F.boardWithOneDispatch()
        var other = StarportState.initial
        // The same board, reached through a replaced dispatch: its old
        // entries are stale.
        let early = Dispatch(id: 1, model: "X", path: "AB", distanceKM: 1, durationS: 1,
                             departsAt: "2026-11-22T07:00:00Z", arrivesAt: "2026-11-22T07:00:01Z")
        other.apply(DomainEvent("dispatched", .object(["dispatch": early.json])), at: F.morning)
        other.apply(DomainEvent("dispatched", .object(["dispatch": plain.dispatches[0].json])), at: F.morning)
        #expect(other == plain)
        #expect(other.nextStatusChange() == plain.nextStatusChange())
        #expect(ChannelState.starport(other).jsonText() == ChannelState.starport(plain).jsonText())
    }

    @Test func aStatusSetBackIsScheduledAgain() throws {
        var board = try F.boardWithOneDispatch()
        _ = board.advance(to: F.at(60))
        #expect(board.nextStatusChange() == F.at(28_080))
        // Only a hand-made event does this; the schedule follows anyway.
        board.apply(DomainEvent("status_changed", .object(["id": .int(1), "status": .string("scheduled")])), at: F.at(61))
        #expect(board.nextStatusChange() == F.morning)
        Self.expectMatchesScan(board, "set back")
        #expect(board.advance(to: F.at(62)).count == 1)
    }
}
