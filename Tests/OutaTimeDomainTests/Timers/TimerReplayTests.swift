import Foundation
@testable import OutaTimeDomain
import OutaTimeProtocol
import Testing

/// Event sourcing: a client that holds a snapshot and applies the events that
/// followed (from `history` or recovery) must see what the server sees.
@Suite struct TimerReplayTests {
    typealias F = TimerFixture

    /// What happens at t0 + `at`: a command, or one of the server's hooks.
    enum Step: Sendable {
        case command(String, [String: JSONValue], session: String, at: Double)
        case advance(at: Double)
        case release(String, at: Double)

        var at: Double {
            switch self {
            case .command(_, _, _, let at), .advance(let at), .release(_, let at): at
            }
        }
    }

    struct Scenario: Sendable, CustomTestStringConvertible {
        let name: String
        /// Steps before the client's snapshot (taken at the last one's time).
        let setup: [Step]
        /// Steps whose events the client applies.
        let steps: [Step]
        /// Viewer counts are presence: a second viewer changes the count
        /// without an event, so scenarios with one compare all other fields.
        var compareViewers = true
        var testDescription: String { name }
    }

    static func add(_ event: String, _ seconds: Int, at: Double = 0) -> Step {
        .command("add", ["event": .string(event), "remaining_s": F.int(seconds)], session: "alice", at: at)
    }

    static func on(_ action: String, _ id: Int, _ session: String = "alice", at: Double,
                   _ extra: [String: JSONValue] = [:]) -> Step {
        .command(action, extra.merging(["id": F.int(id)]) { $1 }, session: session, at: at)
    }

    static let scenarios: [Scenario] = [
        Scenario(name: "add, update, remove", setup: [], steps: [
            add("Clock tower", 600, at: 1), add("Dance", 0, at: 2),
            .command("add", ["event": .string("Lightning"), "location": .string("Courthouse"),
                             "at": .string("1985-10-26T01:31:00Z")], session: "bob", at: 3.5),
            on("update", 1, at: 4, ["location": .string("Hill Valley")]),
            on("update", 2, at: 5, ["remaining_s": F.int(30)]),
            on("remove", 3, at: 6),
            add("After removal", 5, at: 7),
        ]),
        Scenario(name: "one viewer: start, rename, restart, stop, finish", setup: [add("E", 100)], steps: [
            on("start", 1, at: 0.3),
            on("update", 1, at: 5.7, ["event": .string("Renamed")]),
            .advance(at: 10),
            on("update", 1, at: 12.2, ["remaining_s": F.int(50)]),
            on("stop", 1, at: 20.9),
            on("start", 1, "bob", at: 30),
            .advance(at: 50), .advance(at: 72),
        ]),
        Scenario(name: "two viewers and a release", setup: [add("A", 100), add("B", 200)], steps: [
            on("start", 1, "alice", at: 1), on("start", 1, "bob", at: 2), on("start", 2, "bob", at: 2.5),
            on("stop", 1, "alice", at: 10), .release("bob", at: 15.5),
            on("start", 2, "carol", at: 20), on("update", 2, at: 21, ["remaining_s": F.int(0)]),
        ], compareViewers: false),
        Scenario(name: "from a snapshot with next_id and a finished timer",
                 setup: [add("A", 0), add("B", 10), add("C", 10), on("remove", 3, at: 1)], steps: [
            add("D", 20, at: 2), on("update", 1, at: 3, ["at": .string("1985-10-26T01:22:00Z")]),
            on("start", 1, at: 4), on("start", 4, at: 5), .advance(at: 60), on("remove", 2, at: 61),
        ]),
        Scenario(name: "release of the only viewer", setup: [add("A", 30), add("B", 40)], steps: [
            on("start", 1, at: 0), on("start", 2, at: 0.5), .release("alice", at: 9.75),
            on("start", 2, "bob", at: 11), .advance(at: 100),
        ]),
    ]

    /// Runs `step` on `list`; returns its events.
    static func run(_ step: Step, on list: inout TimerListState) throws -> [DomainEvent] {
        switch step {
        case .command(let action, let args, let session, let at):
            try list.perform(action, ActionArgs(args), F.context(at, session: session)).events
        case .advance(let at):
            list.advance(to: F.at(at))
        case .release(let session, let at):
            list.release(session: session, at: F.at(at))
        }
    }

    /// The snapshot, without `viewers` when those are not compared.
    static func visible(_ list: TimerListState, at now: Date, viewers: Bool) -> JSONValue {
        let snapshot = list.snapshot(at: now)
        guard !viewers, case .object(var top) = snapshot, case .array(let timers)? = top["timers"] else { return snapshot }
        top["timers"] = .array(timers.map { timer in
            guard case .object(var fields) = timer else { return timer }
            fields["viewers"] = nil
            return .object(fields)
        })
        return .object(top)
    }

    @Test("snapshot + events = performed state", arguments: scenarios)
    func replay(_ scenario: Scenario) throws {
        var server = TimerListState.initial
        for step in scenario.setup { _ = try Self.run(step, on: &server) }
        var client = try F.decode(server.snapshot(at: F.at(scenario.setup.last?.at ?? 0)))
        var eventCount = 0
        for step in scenario.steps {
            let events = try Self.run(step, on: &server)
            for event in events { client.apply(event, at: F.at(step.at)) }
            eventCount += events.count
            for later in [0, 0.5, 3] {
                let now = F.at(step.at + later)
                #expect(Self.visible(client, at: now, viewers: scenario.compareViewers)
                        == Self.visible(server, at: now, viewers: scenario.compareViewers),
                        "\(scenario.name): after \(step) at +\(later)")
            }
        }
        #expect(eventCount > 0)
        #expect(client.nextID == server.nextID)
        #expect(client.nextFinish() == server.nextFinish())
    }

    @Test("apply ignores what it does not know", arguments: [
        DomainEvent("timer_exploded", .object(["id": F.int(1)])),
        DomainEvent("timer_started", .object(["id": .string("one")])),
        DomainEvent("timer_finished", .object(["id": F.int(99)])),
        DomainEvent("timer_added", .object(["timer": .object(["id": F.int(1)])])),
        DomainEvent("timer_added", .object(["timer": .object([
            "id": F.int(2), "event": .string("dup"), "remaining_s": F.int(1), "status": .string("stopped"),
        ])])),
        DomainEvent("timer_updated", .string("nonsense")),
    ])
    func ignoresUnknown(_ event: DomainEvent) throws {
        var list = try F.mixedList()
        let before = list
        list.apply(event, at: F.at(1))
        #expect(list == before)
    }
}
