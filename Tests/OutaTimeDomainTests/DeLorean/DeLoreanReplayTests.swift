import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// Event sourcing: a client that holds a snapshot and applies the durable
/// events from `history` reaches the server's state.
@Suite struct DeLoreanReplayTests {
    typealias F = DeLoreanFixtures

    /// One thing that happens to the car on the server.
    enum Step: Sendable {
        case command(String, [String: JSONValue])
        case ticks(Int)
        case restart
    }

    static let scripts: [(name: String, steps: [Step])] = [
        ("one trip", [
            .command("set_destination", ["time": .string(F.lightning)]), .command("travel", [:]), .ticks(88),
        ]),
        ("there and back again", [
            .command("set_destination", ["time": .string(F.lightning)]), .command("travel", [:]), .ticks(88),
            .command("set_destination", ["time": .string("1985-10-26T01:24:00Z")]),
            .command("travel", [:]), .ticks(88),
        ]),
        ("a trip cut short by a restart", [
            .command("set_destination", ["time": .string(F.lightning)]), .command("travel", [:]), .ticks(30),
            .restart, .command("travel", [:]), .ticks(88),
        ]),
        ("destination changed twice", [
            .command("set_destination", ["time": .string("2015-10-21T16:29:00Z")]),
            .command("set_destination", ["time": .string(F.lightning)]), .command("travel", [:]), .ticks(88),
        ]),
    ]

    @Test("snapshot + events = server state, from every starting point", arguments: scripts)
    func replay(script: (name: String, steps: [Step])) throws {
        for snapshotAt in 0...script.steps.count {
            var server = F.fresh
            var client: DeLoreanState?
            for (index, step) in script.steps.enumerated() {
                if index == snapshotAt {
                    client = try Self.client(from: server.snapshot(at: F.demoNight))
                }
                let events = try Self.run(step, on: &server)
                for event in events { client?.apply(event, at: F.demoNight) }
                // Ticks are not events: compare only where durable events landed.
                if client != nil, !events.isEmpty {
                    #expect(client == server, "\(script.name): snapshot before step \(snapshotAt), after step \(index)")
                }
            }
        }
    }

    /// Replaying from the initial state reaches the final state too.
    @Test("initial state + all events = final state", arguments: scripts)
    func fullHistory(script: (name: String, steps: [Step])) throws {
        var server = F.fresh
        var history: [DomainEvent] = []
        for step in script.steps { history += try Self.run(step, on: &server) }
        var client = F.fresh
        for event in history { client.apply(event, at: F.demoNight) }
        #expect(client == server)
        #expect(!history.isEmpty)
    }

    @Test("unknown or malformed events change nothing", arguments: [
        DomainEvent("flux_capacitor_fluxing", .object([:])),
        DomainEvent("destination_set", .object([:])),
        DomainEvent("destination_set", .object(["destination_time": .int(1955)])),
        DomainEvent("time_travel", .object(["present_time": .string(F.lightning)])),
    ])
    func ignoredEvent(event: DomainEvent) {
        var car = F.ready
        car.apply(event, at: F.demoNight)
        #expect(car == F.ready)
    }

    static func client(from snapshot: JSONValue) throws -> DeLoreanState {
        guard case .delorean(let state) = try ChannelState(kind: .delorean, json: snapshot) else {
            throw VectorFileError("not a DeLorean snapshot")
        }
        return state
    }

    static func run(_ step: Step, on car: inout DeLoreanState) throws -> [DomainEvent] {
        switch step {
        case .command(let action, let args):
            try car.perform(action, ActionArgs(args), ActionContext(now: F.demoNight)).events
        case .ticks(let count):
            F.accelerate(&car, ticks: count).events
        case .restart:
            car.recoverAfterRestart(at: F.demoNight)
        }
    }
}
