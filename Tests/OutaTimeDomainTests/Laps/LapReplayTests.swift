import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// Event sourcing and restarts: a client holding a snapshot that applies the
/// durable events reaches the server's stopwatch, and a stopwatch read back
/// from storage keeps running.
@Suite struct LapReplayTests {
    typealias F = LapFixtures

    static let scripts: [(name: String, steps: [(String, Int)])] = [
        ("one lap", [("start", 0), ("lap", 61_234), ("stop", 70_000)]),
        ("burger break", [("start", 0), ("lap", 90_000), ("stop", 120_500), ("start", 700_250),
                          ("lap", 760_001), ("lap", 821_999), ("stop", 830_000)]),
        ("reset and again", [("start", 0), ("lap", 1_000), ("stop", 1_500), ("reset", 2_000),
                             ("start", 2_100), ("lap", 3_333)]),
        ("fractional moments", [("start", 123), ("lap", 457), ("lap", 458), ("stop", 999), ("start", 1_001)]),
    ]

    @Test("snapshot + events = server state, from every starting point", arguments: scripts)
    func replay(script: (name: String, steps: [(String, Int)])) throws {
        for snapshotAt in 0...script.steps.count {
            var server = LapSessionState.initial
            var client: LapSessionState?
            for (index, (action, ms)) in script.steps.enumerated() {
                if index == snapshotAt {
                    // Taken a little before the step, while the server may be running.
                    client = try Self.read(server.snapshot(at: F.at(ms - 17)))
                }
                let outcome: ActionOutcome
                (server, outcome) = try F.perform(server, action, atMS: ms)
                for event in outcome.events { client?.apply(event, at: F.at(ms)) }
                guard let client else { continue }
                // Every event carries absolute values, so the states are equal…
                #expect(client == server, "\(script.name): snapshot before step \(snapshotAt), after step \(index)")
                // …and so are the live values later on.
                #expect(client.snapshot(at: F.at(ms + 4_321)) == server.snapshot(at: F.at(ms + 4_321)))
            }
        }
    }

    /// A snapshot of a running stopwatch read back is an equivalent stopwatch.
    @Test("a running snapshot read back keeps the same live values", arguments: [0, 1, 999, 86_400_000])
    func runningSnapshot(laterMS: Int) throws {
        let (server, _) = try F.run([("start", 0), ("lap", 45_678)])
        let client = try Self.read(server.snapshot(at: F.at(50_000)))
        #expect(client.snapshot(at: F.at(50_000 + laterMS)) == server.snapshot(at: F.at(50_000 + laterMS)))
        #expect(client.tick(at: F.at(50_000 + laterMS)) == server.tick(at: F.at(50_000 + laterMS)))
    }

    @Test("initial state + all events = final state", arguments: scripts)
    func fullHistory(script: (name: String, steps: [(String, Int)])) throws {
        let (server, history) = try F.run(script.steps)
        var client = LapSessionState.initial
        for event in history { client.apply(event, at: F.t0) }
        #expect(client == server)
        #expect(history.count == script.steps.count)
    }

    /// A restart reloads the stored text: the stopwatch has kept running, and
    /// there is nothing to recover.
    @Test("a running stopwatch survives a restart", arguments: [1_000, 3_600_000])
    func restart(downMS: Int) throws {
        let (server, _) = try F.run([("start", 0), ("lap", 10_000), ("stop", 15_000), ("start", 20_000)])
        let stored = ChannelState.laps(server).jsonText()
        guard case .laps(var reloaded) = try ChannelState(kind: .laps, jsonText: stored) else {
            Issue.record("not a laps state")
            return
        }
        #expect(reloaded == server)
        #expect(reloaded.recoverAfterRestart(at: F.at(20_000 + downMS)).isEmpty)
        #expect(reloaded == server)
        #expect(reloaded.totalElapsedMS(at: F.at(20_000 + downMS)) == 15_000 + downMS)
        #expect(reloaded.lapElapsedMS(at: F.at(20_000 + downMS)) == 5_000 + downMS)
    }

    /// A running state stored before `elapsed_as_of` existed measures from `running_since`.
    @Test func stateWithoutElapsedAsOf() {
        let legacy = LapSessionState(status: .running, lapNumber: 3, lapElapsedMS: 1_250, totalElapsedMS: 181_250,
                                     runningSince: "2026-11-22T08:00:00Z")
        #expect(legacy.tick(at: F.at(750)) == F.tick(3, 2_000, 182_000))
    }

    @Test("unknown or malformed events change nothing", arguments: [
        DomainEvent("sprint", .object([:])),
        DomainEvent("started", .object(["lap_number": .int(1)])),
        DomainEvent("stopped", .object(["lap_elapsed_ms": .string("5")])),
        DomainEvent("lap_completed", .object(["lap": .int(3), "time_ms": .int(1)])),
        DomainEvent("reset", .string("now")),
    ])
    func ignoredEvent(event: DomainEvent) {
        var state = F.running
        state.apply(event, at: F.t0)
        #expect(state == F.running)
    }

    static func read(_ snapshot: JSONValue) throws -> LapSessionState {
        guard case .laps(let state) = try ChannelState(kind: .laps, json: snapshot) else {
            throw VectorFileError("not a laps snapshot")
        }
        return state
    }
}
