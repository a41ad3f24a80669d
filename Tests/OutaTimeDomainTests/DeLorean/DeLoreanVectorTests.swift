import Foundation
import OutaTimeDomain
import OutaTimeProtocol
import Testing

extension DeLoreanState: VectorSubject {
    static func initial(at now: Date) -> DeLoreanState { .initial(now: now) }

    init(snapshot: JSONValue) throws {
        guard case .delorean(let state) = try ChannelState(kind: .delorean, json: snapshot) else {
            throw VectorFileError("not a DeLorean snapshot")
        }
        self = state
    }

    mutating func runHook(_ name: String, at now: Date) -> (tick: JSONValue?, events: [DomainEvent])? {
        switch name {
        case "accelerate":
            let (tick, events) = accelerate(at: now)
            return (tick, events)
        case "recover_after_restart":
            return (nil, recoverAfterRestart(at: now))
        default:
            return nil
        }
    }
}

/// `protocol/vectors/delorean.json`, the cases other clients can run too.
@Suite struct DeLoreanVectorTests {
    @Test("protocol/vectors/delorean.json", arguments: try ProtocolVectors.load("delorean"))
    func vector(_ vector: ProtocolVector) throws {
        try ProtocolVectors.run(vector, as: DeLoreanState.self)
    }

    @Test func fileCoversEveryActionHookAndError() throws {
        let coverage = ProtocolVectors.coverage(of: try ProtocolVectors.load("delorean"))
        #expect(coverage.actions.isSuperset(of: DeLoreanState.actions.keys))
        #expect(coverage.hooks == ["accelerate", "recover_after_restart"])
        #expect(coverage.codes.isSuperset(of: [
            "conflict", "no_destination", "invalid_time", "invalid_args", "unknown_action",
        ]))
    }
}
