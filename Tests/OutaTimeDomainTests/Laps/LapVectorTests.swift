import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import Testing

extension LapSessionState: VectorSubject {
    static func initial(at now: Date) -> LapSessionState { .initial }

    init(snapshot: JSONValue) throws {
        self = try LapReplayTests.read(snapshot)
    }

    mutating func runHook(_ name: String, at now: Date) -> (tick: JSONValue?, events: [DomainEvent])? {
        switch name {
        case "tick": (tick(at: now), [])
        case "recover_after_restart": (nil, recoverAfterRestart(at: now))
        default: nil
        }
    }
}

/// `protocol/vectors/laps.json`, the cases other clients can run too.
@Suite struct LapVectorTests {
    @Test("protocol/vectors/laps.json", arguments: try ProtocolVectors.load("laps"))
    func vector(_ vector: ProtocolVector) throws {
        try ProtocolVectors.run(vector, as: LapSessionState.self)
    }

    @Test func fileCoversEveryActionHookAndError() throws {
        let coverage = ProtocolVectors.coverage(of: try ProtocolVectors.load("laps"))
        #expect(coverage.actions.isSuperset(of: LapSessionState.actions.keys))
        #expect(coverage.hooks == ["tick", "recover_after_restart"])
        #expect(coverage.codes == ["conflict", "unknown_action"])
    }
}
