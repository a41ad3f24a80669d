import OutaTimeTestKit
import Testing
@testable import UV

/// ``TCPListener``'s bound on the connections handed over per loop
/// iteration, on a real loop over loopback. Iterations are counted by a
/// prepare handle: the tests assert in which iteration each connection is
/// accepted, never how long anything took. Each ends with `Loop.close()`,
/// so the listener's own idle handle is shown closed too.
@Suite struct AcceptBoundTests {
    final class Flood {
        let loop: Loop
        let listener: TCPListener
        let counter: Prepare
        var iteration = 0
        /// The iteration of each accept, in order.
        var acceptedIn: [Int] = []
        var servers: [TCPStream] = []
        var clients: [TCPStream] = []

        init(acceptsPerIteration: Int?) throws {
            loop = try Loop()
            listener = TCPListener(loop: loop)
            counter = Prepare(loop: loop)
            counter.start { [unowned self] in iteration += 1 }
            try listener.bind(SocketAddress(host: "127.0.0.1", port: 0))
            try listener.listen(acceptsPerIteration: acceptsPerIteration) { [unowned self] error in
                #expect(error == nil)
                guard let stream = try? listener.accept() else { return }
                acceptedIn.append(iteration)
                servers.append(stream)
            }
        }

        /// Starts `count` connections: on loopback the kernel completes each
        /// handshake within `connect()`, so all of them wait in the listen
        /// queue before the loop runs once.
        func connect(_ count: Int) throws {
            let address = try SocketAddress(host: "127.0.0.1", port: listener.localAddress!.port)
            for _ in 0..<count {
                let client = TCPStream(loop: loop)
                client.connect(to: address) { _ in }
                clients.append(client)
            }
        }

        /// Runs loop iterations until `done` (bounded); returns how many ran.
        @discardableResult
        func run(_ done: () -> Bool) throws -> Int {
            var turns = 0
            while !done() {
                turns += 1
                try #require(turns < 10_000, "the loop made no progress")
                loop.runOnce()
            }
            return turns
        }

        /// Accepts per iteration, for the iterations that accepted any.
        var perIteration: [Int: Int] { acceptedIn.reduce(into: [:]) { $0[$1, default: 0] += 1 } }

        func close() throws {
            for stream in clients + servers { stream.close() }
            listener.close()
            counter.close()
            loop.run()
            try loop.close()
        }
    }

    @Test func withoutABoundLibuvAcceptsEveryPendingConnectionInOneIteration() throws {
        let flood = try Flood(acceptsPerIteration: nil)
        try flood.connect(40)
        try flood.run { flood.acceptedIn.count == 40 }
        #expect(flood.perIteration.count == 1, "accepted per iteration: \(flood.perIteration)")
        try flood.close()
    }

    @Test func aBoundSpreadsAcceptsOverIterationsAndTakesEveryConnection() throws {
        let flood = try Flood(acceptsPerIteration: 8)
        try flood.connect(40)
        try flood.run { flood.acceptedIn.count == 40 }
        let counts = flood.perIteration
        // The connection held back is handed over in the next iteration's
        // idle phase, which runs before the prepare handle counts that
        // iteration: by this count a slice shows up to 8 + 1.
        #expect(counts.values.allSatisfy { $0 <= 8 + 1 }, "accepted per iteration: \(counts)")
        #expect(counts.count >= 5, "accepted per iteration: \(counts)")
        try flood.close()
    }

    @Test func theCountBeginsAgainInEachIteration() throws {
        let flood = try Flood(acceptsPerIteration: 3)
        for round in 1...4 {
            try flood.connect(2)
            // Two, under the bound: both in the iteration they arrive in. A
            // count carried over from the round before would hold the second
            // one back for an iteration more.
            let turns = try flood.run { flood.acceptedIn.count == 2 * round }
            #expect(turns == 1, "round \(round): \(turns) iterations")
        }
        try flood.close()
    }

    @Test func closingTheListenerWithAConnectionWaitingLeavesNoHandleOpen() throws {
        let flood = try Flood(acceptsPerIteration: 1)
        try flood.connect(5)
        try flood.run { flood.acceptedIn.count == 1 }
        // The second one waits with libuv for the next iteration; closing now
        // must close it and the listener's idle handle (Loop.close checks).
        try flood.close()
    }
}
