import CLibUV
import OutaTimeTestKit
import Testing
@testable import UV

/// The per-iteration read budget (``ReadBudget``) on a real loop over
/// loopback. Loop iterations are counted by a prepare handle, so the tests
/// assert in which iteration bytes arrive, never how long anything took.
/// Each test ends with `Loop.close()`: the budget's own handle is closed too.
@Suite struct ReadBudgetTests {
    static let budget = ReadBudget.bytesPerRead

    /// Connected pairs of streams on one loop, and an iteration counter.
    final class Pairs {
        let loop: Loop
        let listener: TCPListener
        let counter: Prepare
        var iteration = 0
        var clients: [TCPStream] = []
        var servers: [TCPStream] = []

        init(count: Int) throws {
            loop = try Loop()
            listener = TCPListener(loop: loop)
            counter = Prepare(loop: loop)
            counter.start { [unowned self] in iteration += 1 }
            try listener.bind(SocketAddress(host: "127.0.0.1", port: 0))
            try listener.listen(backlog: 2_048) { [unowned self] _ in  // room for every pair at once
                if let stream = try? listener.accept() { servers.append(stream) }
            }
            let address = try SocketAddress(host: "127.0.0.1", port: listener.localAddress!.port)
            for _ in 0..<count {
                let client = TCPStream(loop: loop)
                client.connect(to: address) { error in #expect(error == nil) }
                clients.append(client)
            }
            try run { servers.count == count }
        }

        /// Sends `payloads[i]` from client `i` and waits until the kernel
        /// holds all of it: the server side starts reading with every byte
        /// already waiting.
        func send(_ payloads: [[UInt8]]) throws {
            for (client, payload) in zip(clients, payloads) {
                client.enqueue(OwnedBytes(payload))
                client.flush()
            }
            try run { clients.allSatisfy(\.isDrained) }
        }

        /// Runs loop iterations until `done` (bounded, so a bug fails the test instead of hanging it).
        func run(_ done: () -> Bool) throws {
            var turns = 0
            while !done() {
                turns += 1
                try #require(turns < 100_000, "the loop made no progress")
                loop.runOnce()
            }
        }

        func close() throws {
            for stream in clients + servers { stream.close() }
            listener.close()
            counter.close()
            loop.run()
            try loop.close()
        }
    }

    /// Deterministic bytes, different per stream, so order and origin show.
    static func payload(_ count: Int, seed: UInt8) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 8) ^ seed }
    }

    @Test func aLargeBacklogIsReadOverManyIterationsWhileAnotherStreamIsServed() throws {
        let pairs = try Pairs(count: 2)
        let large = Self.payload(16 * Self.budget, seed: 0x5A)
        let small = Self.payload(100, seed: 0xA5)
        try pairs.send([large, small])
        var largeReceived: [UInt8] = []
        var smallReceived: [UInt8] = []
        var largeBytesPerIteration: [Int: Int] = [:]
        var smallIteration: Int?
        try pairs.servers[0].startReading(onData: { bytes in
            largeReceived.append(contentsOf: bytes)
            largeBytesPerIteration[pairs.iteration, default: 0] += bytes.count
        }, onEnd: { _ in })
        try pairs.servers[1].startReading(onData: { bytes in
            smallReceived.append(contentsOf: bytes)
            smallIteration = smallIteration ?? pairs.iteration
        }, onEnd: { _ in })
        try pairs.run { largeReceived.count == large.count && smallReceived.count == small.count }

        #expect(largeReceived == large)
        #expect(smallReceived == small)
        // Cheap reads (appending bytes): up to `readsPerIteration` in a row per iteration.
        let perIteration = ReadBudget.readsPerIteration * Self.budget
        #expect(largeBytesPerIteration.values.allSatisfy { $0 <= perIteration })
        #expect(largeBytesPerIteration.count >= large.count / perIteration)
        // The small stream was not kept waiting for the whole backlog.
        let lastLarge = try #require(largeBytesPerIteration.keys.max())
        #expect(try #require(smallIteration) < lastLarge)
        try pairs.close()
    }

    /// Reads whose handling costs more than ``ReadBudget/cheapReadTime``
    /// (the callback spins past it: what a read of publishes to thousands of
    /// subscribers costs) get one full read per iteration, as a budget of
    /// 16 KiB alone gave; cheap ones go on, up to `readsPerIteration` in a row.
    @Test(arguments: [false, true])
    func aStreamGoesOnPastOneReadOnlyWhileReadsAreCheap(expensive: Bool) throws {
        let pairs = try Pairs(count: 1)
        let payload = Self.payload(12 * Self.budget, seed: 0x3C)
        try pairs.send([payload])
        var received: [UInt8] = []
        var bytesPerIteration: [Int: Int] = [:]
        try pairs.servers[0].startReading(onData: { bytes in
            received.append(contentsOf: bytes)
            bytesPerIteration[pairs.iteration, default: 0] += bytes.count
            if expensive {
                let until = uv_hrtime() + ReadBudget.cheapReadTime + 100_000
                while uv_hrtime() < until {}
            }
        }, onEnd: { _ in })
        try pairs.run { received.count == payload.count }
        #expect(received == payload)
        let most = try #require(bytesPerIteration.values.max())
        if expensive {
            #expect(most == Self.budget)
            #expect(bytesPerIteration.count >= 12)
        } else {
            #expect(most > Self.budget)
            #expect(most <= ReadBudget.readsPerIteration * Self.budget)
            #expect(bytesPerIteration.count < 12)
        }
        try pairs.close()
    }

    /// Two streams with backlogs: in the first iteration the first one read
    /// is paused for its budget, and the second one's callback stops it
    /// then. It must stay stopped until resumed (`resumeAtOnce`: resumed in
    /// the same callback, while still paused), then deliver the rest in order.
    @Test(arguments: [false, true])
    func aStreamStoppedWhilePausedStaysStopped(resumeAtOnce: Bool) throws {
        let pairs = try Pairs(count: 2)
        let payloads = [Self.payload(8 * Self.budget, seed: 1), Self.payload(8 * Self.budget, seed: 2)]
        try pairs.send(payloads)
        var received: [[UInt8]] = [[], []]
        var stopped: Int?
        var stoppedWhilePaused = false
        var deliveredWhileStopped = 0
        for index in 0..<2 {
            let other = 1 - index
            try pairs.servers[index].startReading(onData: { bytes in
                if stopped == index { deliveredWhileStopped += 1 }
                received[index].append(contentsOf: bytes)
                if stopped == nil, !received[other].isEmpty {
                    stopped = other
                    stoppedWhilePaused = pairs.servers[other].isOverBudget
                    pairs.servers[other].stopReading()
                    if resumeAtOnce { try? pairs.servers[other].resumeReading() }
                }
            }, onEnd: { _ in })
        }
        try pairs.run { stopped != nil && received[1 - stopped!].count == payloads[1 - stopped!].count }
        let index = try #require(stopped)
        #expect(stoppedWhilePaused)
        if resumeAtOnce {
            try pairs.run { received[index].count == payloads[index].count }
        } else {
            #expect(deliveredWhileStopped == 0)
            #expect(pairs.servers[index].isReading == false)
            try pairs.servers[index].resumeReading()
            try pairs.run { received[index].count == payloads[index].count }
        }
        #expect(received == payloads)
        try pairs.close()
    }

    /// Stopping in the read callback (the server's own backpressure) wins
    /// over the budget: the loop does not restart the stream.
    @Test func stoppingInTheReadCallbackIsNotUndoneByTheBudget() throws {
        let pairs = try Pairs(count: 2)
        let payloads = [Self.payload(4 * Self.budget, seed: 3), Self.payload(4 * Self.budget, seed: 4)]
        try pairs.send(payloads)
        var received: [[UInt8]] = [[], []]
        var deliveriesAfterStop = 0
        var stopOnData = true
        try pairs.servers[0].startReading(onData: { bytes in
            if stopOnData, !received[0].isEmpty { deliveriesAfterStop += 1 }
            received[0].append(contentsOf: bytes)
            if stopOnData { pairs.servers[0].stopReading() }
        }, onEnd: { _ in })
        try pairs.servers[1].startReading(onData: { received[1].append(contentsOf: $0) }, onEnd: { _ in })
        // The second stream needs several iterations: the first had as many turns.
        try pairs.run { received[1].count == payloads[1].count }
        #expect(deliveriesAfterStop == 0)
        #expect(received[0].count <= Self.budget)
        stopOnData = false
        try pairs.servers[0].resumeReading()
        try pairs.run { received[0].count == payloads[0].count }
        #expect(received == payloads)
        try pairs.close()
    }

    // MARK: The time per iteration (Loop.readTimePerIteration)

    /// Starts reading every server-side stream, recording the stream and
    /// the iteration of each delivery.
    static func readAll(_ pairs: Pairs, into received: Recorder) throws {
        for (index, stream) in pairs.servers.enumerated() {
            try stream.startReading(onData: { bytes in
                received.bytes[index].append(contentsOf: bytes)
                received.reads.append((index, pairs.iteration))
            }, onEnd: { _ in })
        }
    }

    final class Recorder {
        var bytes: [[UInt8]]
        var reads: [(stream: Int, iteration: Int)] = []
        init(count: Int) { bytes = Array(repeating: [], count: count) }
    }

    /// With no time to spare, each iteration reads one stream, and four
    /// streams with backlogs take turns: in every round of four reads each
    /// reads once. Without the rounds, epoll's fixed order would serve the
    /// front streams first every time.
    @Test func withNoTimeEachIterationReadsOneStreamAndBackloggedStreamsTakeTurns() throws {
        let pairs = try Pairs(count: 4)
        let payloads = (0..<4).map { Self.payload(3 * Self.budget, seed: UInt8(16 + $0)) }
        try pairs.send(payloads)
        pairs.loop.readTimePerIteration = 0
        let received = Recorder(count: 4)
        try Self.readAll(pairs, into: received)
        try pairs.run { received.bytes.map(\.count) == payloads.map(\.count) }

        #expect(received.bytes == payloads)
        let iterations = received.reads.map(\.iteration)
        #expect(Set(iterations).count == iterations.count, "two reads in one iteration: \(received.reads)")
        let order = received.reads.map(\.stream)
        #expect(order.count == 12)
        for round in stride(from: 0, to: order.count, by: 4) {
            #expect(Set(order[round..<min(round + 4, order.count)]) == [0, 1, 2, 3], "reads in order: \(order)")
        }
        #expect(pairs.loop.deferredReads > 0)
        try pairs.close()
    }

    /// A stream stopped while it is owed a read gives up its turn: the
    /// others go on (if its debt lasted, no one else could read), and it
    /// reads its whole backlog once resumed.
    @Test func aStreamStoppedWhileOwedDoesNotHoldUpTheOthers() throws {
        let pairs = try Pairs(count: 3)
        let payloads = (0..<3).map { Self.payload(2 * Self.budget, seed: UInt8(32 + $0)) }
        try pairs.send(payloads)
        pairs.loop.readTimePerIteration = 0
        var bytes: [[UInt8]] = [[], [], []]
        var stopped: Int?
        var readsWhileStopped = 0
        for (index, stream) in pairs.servers.enumerated() {
            try stream.startReading(onData: { data in
                if index == stopped { readsWhileStopped += 1 }
                bytes[index].append(contentsOf: data)
                // The second read: the stream not read yet has been owed
                // a read in this round since the first iteration.
                if stopped == nil, bytes.filter({ !$0.isEmpty }).count == 2,
                   let other = bytes.firstIndex(where: \.isEmpty) {
                    #expect(pairs.servers[other].isOwed)
                    stopped = other
                    pairs.servers[other].stopReading()
                }
            }, onEnd: { _ in })
        }
        let others = try { () throws -> [Int] in
            try pairs.run { stopped != nil }
            return (0..<3).filter { $0 != stopped }
        }()
        try pairs.run { others.allSatisfy { bytes[$0].count == payloads[$0].count } }
        #expect(readsWhileStopped == 0)
        let index = try #require(stopped)
        try pairs.servers[index].resumeReading()
        try pairs.run { bytes[index].count == payloads[index].count }
        #expect(bytes == payloads)
        try pairs.close()
    }

    /// Within the time, nothing changes: every ready stream is read in the
    /// same iteration and nothing is deferred.
    @Test func withinTheTimeEveryReadyStreamIsReadInOneIteration() throws {
        let pairs = try Pairs(count: 4)
        let payloads = (0..<4).map { Self.payload(1_000 + $0, seed: UInt8(48 + $0)) }
        try pairs.send(payloads)
        pairs.loop.readTimePerIteration = 10_000_000_000  // 10 s: far more than four small reads take
        let received = Recorder(count: 4)
        try Self.readAll(pairs, into: received)
        try pairs.run { received.bytes.map(\.count) == payloads.map(\.count) }
        #expect(received.bytes == payloads)
        #expect(Set(received.reads.map(\.iteration)).count == 1, "\(received.reads)")
        #expect(pairs.loop.deferredReads == 0)
        try pairs.close()
    }

    /// More than 1,024 ready streams: libuv then polls again within one
    /// iteration, and deferred streams, still readable, come up again; the
    /// second time they are paused (from the read callback: libuv calls it
    /// after the alloc). Each stream reads once per round all the same.
    @Test(.enabled(if: OpenFileLimit.raise(to: 2_400), "needs 2,400 open files"))
    func moreReadyStreamsThanOnePollReturns() throws {
        let count = 1_100
        let pairs = try Pairs(count: count)
        let payloads = (0..<count).map { Self.payload(100, seed: UInt8(truncatingIfNeeded: $0)) }
        try pairs.send(payloads)
        pairs.loop.readTimePerIteration = 0
        let received = Recorder(count: count)
        try Self.readAll(pairs, into: received)
        try pairs.run { received.reads.count == count }
        // Past the listen backlog, accepts need not come in connect order:
        // compare what arrived as a whole.
        let inOrder = { (bytes: [[UInt8]]) in bytes.sorted { $0.lexicographicallyPrecedes($1) } }
        #expect(inOrder(received.bytes) == inOrder(payloads))
        let iterations = received.reads.map(\.iteration)
        #expect(Set(iterations).count == count, "two reads in one iteration")
        // Counted once per stream and iteration: at most every waiting stream in each.
        #expect(pairs.loop.deferredReads > 0 && pairs.loop.deferredReads <= count * count / 2)
        try pairs.close()
    }
}
