import Testing
@testable import UV

/// The server's sessions give their stream callbacks that hold the session
/// itself, strongly (a closure capturing one object needs no box of its
/// own): the cycle session → stream → callback → session must end when the
/// stream closes, or every closed connection would leak its session.
@Suite struct StreamCallbackTests {
    final class Owner {}

    @Test("closing a stream releases everything its callbacks hold")
    func closingReleasesTheCallbacks() throws {
        let pairs = try ReadBudgetTests.Pairs(count: 1)
        let stream = pairs.servers[0]
        weak var released: Owner?
        do {
            let owner = Owner()
            released = owner
            stream.onWriteError = { _ in _ = owner }
            stream.onDrained = { _ = owner }
            try stream.startReading(onData: { _ in _ = owner }, onEnd: { _ in _ = owner })
        }
        #expect(released != nil, "the open stream's callbacks hold their owner")
        stream.close()
        #expect(released == nil, "the closed stream holds nothing")
        try pairs.close()
    }
}
