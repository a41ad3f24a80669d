import Foundation
import Testing
import CLibUV
@testable import UV

/// These tests run real handles on a real loop and end with `Loop.close()`:
/// libuv refuses to close a loop while any handle is open, so a passing close
/// proves that every handle was closed and its memory released.
@Suite struct LoopLifecycleTests {
    @Test func timerFiresThenLoopClosesCleanly() throws {
        let loop = try Loop()
        let timer = Timer(loop: loop)
        var fired = 0
        timer.start(timeoutMs: 1, repeatMs: 1) {
            fired += 1
            if fired == 3 { timer.close() }
        }
        loop.run()
        #expect(fired == 3)
        #expect(loop.openHandleCount == 0)
        try loop.close()
    }

    @Test("a turn asked for from its own callback runs in the next iteration, once however often asked; a zero timer re-armed from its callback does not wait (libuv < 1.48)")
    func nextTurnYieldsEachIteration() throws {
        let loop = try Loop()
        var turns = 0
        var turn: NextTurn!
        turn = NextTurn(loop: loop) {
            turns += 1
            if turns < 5 {
                turn.request()
                turn.request()  // asked twice: still one turn
            }
        }
        turn.request()
        turn.request()
        #expect(turn.isRequested)
        for iteration in 1...5 {
            loop.runNoWait()
            #expect(turns == iteration, "one turn per iteration, at iteration \(iteration)")
        }
        loop.runNoWait()
        #expect(turns == 5 && !turn.isRequested)
        // Why it exists: the same with a zero timer runs all five in one iteration here.
        let timer = Timer(loop: loop)
        var fired = 0
        func again() { timer.start(timeoutMs: 0) { fired += 1; if fired < 5 { again() } } }
        again()
        loop.runNoWait()
        if uv_version() < 0x01_30_00 { #expect(fired == 5, "libuv \(String(cString: uv_version_string()))") }
        timer.close()
        turn.close()
        loop.run()
        #expect(loop.openHandleCount == 0)
        try loop.close()
    }

    @Test func unclosedHandleMakesLoopCloseFail() throws {
        let loop = try Loop()
        let timer = Timer(loop: loop)
        #expect(throws: UVError.self) { try loop.close() }
        timer.close()
        loop.run()
        try loop.close()
    }

    @Test func tcpEchoOverLoopbackThenCleanClose() throws {
        let loop = try Loop()
        let listener = TCPListener(loop: loop)
        try listener.bind(SocketAddress(host: "127.0.0.1", port: 0))
        var accepted: TCPStream?
        var serverReceived = [UInt8]()
        try listener.listen { error in
            #expect(error == nil)
            guard let stream = try? listener.accept() else { return }
            accepted = stream
            try? stream.startReading(onData: { bytes in
                serverReceived.append(contentsOf: bytes)
                stream.enqueue(OwnedBytes(bytes))  // echo
                stream.flush()
            }, onEnd: { _ in
                stream.close()
                listener.close()
            })
        }
        let port = try #require(listener.localAddress?.port)
        #expect(port > 0)

        let client = TCPStream(loop: loop)
        var clientReceived = [UInt8]()
        let message = Array("hello, 1.21 gigawatts".utf8)
        client.connect(to: try SocketAddress(host: "127.0.0.1", port: port)) { error in
            #expect(error == nil)
            for byte in message { client.enqueue(OwnedBytes([byte])) }  // many chunks, one writev
            client.flush()
            try? client.startReading(onData: { bytes in
                clientReceived.append(contentsOf: bytes)
                if clientReceived.count == message.count {
                    client.shutdown { _ in client.close() }
                }
            }, onEnd: { _ in client.close() })
        }
        loop.run()
        #expect(serverReceived == message)
        #expect(clientReceived == message)
        #expect(accepted != nil)
        try loop.close()
    }

    #if os(Linux)
    @Test("with deferAccept a connection is handed over when its first bytes arrive: a silent one opened earlier waits")
    func deferAcceptHandsOverSpeakersFirst() throws {
        let loop = try Loop()
        let listener = TCPListener(loop: loop)
        try listener.bind(SocketAddress(host: "127.0.0.1", port: 0))
        #expect(listener.deferAccept(seconds: 30))
        let silent = TCPStream(loop: loop)
        let speaker = TCPStream(loop: loop)
        let pause = Timer(loop: loop)
        var accepted: [TCPStream] = []
        var firstBytes: [UInt8]?
        func closeAll() {
            for stream in accepted { stream.close() }
            listener.close()
            silent.close()
            speaker.close()
            pause.close()
        }
        try listener.listen { error in
            #expect(error == nil)
            guard let stream = try? listener.accept() else { return }
            accepted.append(stream)
            try? stream.startReading(onData: { bytes in
                if firstBytes == nil {
                    firstBytes = Array(bytes)
                    closeAll()
                }
            }, onEnd: { _ in })
        }
        let address = try SocketAddress(host: "127.0.0.1", port: try #require(listener.localAddress?.port))
        silent.connect(to: address) { error in
            #expect(error == nil)
            // The silent one is connected (for its client) before the speaker
            // even connects, and for a while before the speaker speaks.
            speaker.connect(to: address) { error in
                #expect(error == nil)
                pause.start(timeoutMs: 100, repeatMs: 0) {
                    speaker.enqueue(OwnedBytes(Array("speak".utf8)))
                    speaker.flush()
                }
            }
        }
        loop.run()
        #expect(firstBytes == Array("speak".utf8))
        #expect(accepted.count == 1, "the silent connection was not handed over")
        try loop.close()
    }
    #endif

    @Test func inboxDeliversMessagesPostedFromOtherThreads() throws {
        let loop = try Loop()
        var received = [Int]()
        var inbox: AsyncInbox<Int>?
        inbox = try AsyncInbox<Int>(loop: loop) { messages in
            received.append(contentsOf: messages)
            if received.count == 400 { inbox?.close() }
        }
        let sender = inbox!.sender
        let threads = (0..<4).map { part in
            Thread {
                for value in 0..<100 { sender.post(part * 100 + value) }
            }
        }
        threads.forEach { $0.start() }
        loop.run()
        #expect(received.count == 400)
        #expect(Set(received) == Set(0..<400))
        // Per sender thread, order is preserved.
        let firstPart = received.filter { $0 < 100 }
        #expect(firstPart == Array(0..<100))
        #expect(sender.post(1) == false)
        try loop.close()
    }

    @Test func signalIsDeliveredOnTheLoop() throws {
        let loop = try Loop()
        let signal = Signal(loop: loop)
        var seen: Int32 = 0
        try signal.start(SIGUSR2) { signum in
            seen = signum
            signal.close()
        }
        let timer = Timer(loop: loop)
        timer.start(timeoutMs: 1) {
            // Test runner threads may block signals; raise() targets this one.
            Signal.unblock([SIGUSR2])
            raise(SIGUSR2)
            timer.close()
        }
        loop.run()
        #expect(seen == SIGUSR2)
        try loop.close()
    }

    @Test func writeQueueConsumesPartialChunks() throws {
        var queue = WriteQueue()
        queue.append(OwnedBytes([1, 2, 3]))
        queue.append(OwnedBytes([4, 5]))
        #expect(queue.byteCount == 5)
        queue.consume(4)
        #expect(queue.byteCount == 1)
        let taken = queue.removeFirst(1)
        #expect(taken.count == 1)
        taken.forEach { $0.release() }
        #expect(queue.isEmpty)
        #expect(queue.byteCount == 0)
    }

    @Test func writeQueueReleasesChunksAndWrapsAround() throws {
        var queue = WriteQueue()
        weak var first: OwnedBytes?
        do {
            let chunk = OwnedBytes([1, 2, 3])
            first = chunk
            queue.append(chunk)
        }
        #expect(first != nil, "the queue keeps a queued chunk alive")
        queue.consume(3)
        #expect(first == nil, "a fully written chunk is released")
        #expect(queue.isEmpty)

        // Interleave appends and consumes so the ring wraps and grows.
        var expected: [UInt8] = []
        var written: [UInt8] = []
        let buffers = UnsafeMutablePointer<uv_buf_t>.allocate(capacity: 64)
        defer { buffers.deallocate() }
        for round in 0..<40 {
            for index in 0..<(round % 7 + 1) {
                let byte = UInt8((round * 8 + index) % 251)
                queue.append(OwnedBytes([byte, byte]))
                expected += [byte, byte]
            }
            // Write 3 bytes at a time: chunks are split across writes.
            let filled = queue.fill(buffers, max: 64)
            var take = Swift.min(3, queue.byteCount)
            for index in 0..<filled where take > 0 {
                let base = UnsafeRawPointer(buffers[index].base!)
                let length = Swift.min(take, Int(buffers[index].len))
                written += UnsafeRawBufferPointer(start: base, count: length)
                take -= length
            }
            queue.consume(Swift.min(3, queue.byteCount))
        }
        #expect(queue.count > 8, "the ring grew past its first capacity")
        while !queue.isEmpty {
            let filled = queue.fill(buffers, max: 64)
            var total = 0
            for index in 0..<filled {
                written += UnsafeRawBufferPointer(start: UnsafeRawPointer(buffers[index].base!), count: Int(buffers[index].len))
                total += Int(buffers[index].len)
            }
            queue.consume(total)
        }
        #expect(written == expected)
        #expect(queue.byteCount == 0)
        queue.removeAll()
    }
}
