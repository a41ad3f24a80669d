import Histogram
import Synchronization
import UV

/// What the HTTP crowd did in all rounds, readable from the coordinator.
final class HTTPCrowdTally: WorkerTally, @unchecked Sendable {
    /// Idle connections whose connect succeeded.
    let opened = Atomic<Int>(0)
    /// Connects that failed (refused, reset, no descriptor).
    let connectFailures = Atomic<Int>(0)
    /// Idle connections the server closed while the round ran.
    let closedByServer = Atomic<Int>(0)
    /// Idle connections still open when the round ended (the harness closed
    /// them): held by the server, or waiting in its listener's queue.
    let heldAtEnd = Atomic<Int>(0)
    /// Connects (idle or bad) still under way when the round ended: the
    /// server's queue was full and the kernel let their SYNs wait.
    let connectingAtEnd = Atomic<Int>(0)
    /// Slow heads (every 10th idle connection sends half a head) answered `408`.
    let slowHeads408 = Atomic<Int>(0)
    /// Bad requests sent, and how each ended: a status line (then a close), or a bare close.
    let badSent = Atomic<Int>(0)
    let bad400 = Atomic<Int>(0)
    let bad405 = Atomic<Int>(0)
    let bad431 = Atomic<Int>(0)
    let badOtherStatus = Atomic<Int>(0)
    let badClosedBare = Atomic<Int>(0)
    /// Bad requests sent whose connection was still open, unanswered, when the round ended.
    let badUnansweredAtEnd = Atomic<Int>(0)
    /// True while no round runs (set after `.stop` closed everything).
    let idle = Atomic<Bool>(true)
}

enum HTTPCrowdOrder: Sendable {
    /// Open the idle crowd and send bad heads until `.stop`.
    case start
    /// Close every connection of the round.
    case stop
    /// Store the close-time histogram, close, let the loop end.
    case finish
}

/// Opens `idle` HTTP connections (at most `concurrency` connecting at a
/// time) that send nothing, or half a head (every 10th), and every 10 ms
/// `badPerTick` bad requests on fresh connections: a 9 KiB header field
/// (431), `POST` (405), a protocol frame (400). Records how each ended.
final class HTTPCrowdWorker {
    struct Plan: Sendable {
        let address: SocketAddress
        let idle: Int
        let concurrency: Int
        let badPerTick: Int
    }

    private let loop: Loop
    private let plan: Plan
    private let tally: HTTPCrowdTally
    private var queue: OpenQueue
    /// What a connection of the round is doing, for the end-of-round count.
    private enum Role {
        case connecting, idle, bad
    }
    private var streams: [ObjectIdentifier: (stream: TCPStream, role: Role)] = [:]
    private let pacer: UV.Timer
    private var inbox: AsyncInbox<HTTPCrowdOrder>?
    private var running = false
    private var badCounter = 0
    /// Milliseconds from connect to the server's close, for idle connections it closed.
    private var closeTimes = Histogram<UInt64>.microseconds()

    static let badRequests: [[UInt8]] = [
        Array(("GET /healthz HTTP/1.1\r\nHost: a\r\nX-Big: " + String(repeating: "v", count: 9_000) + "\r\n\r\n").utf8),
        Array("POST /healthz HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n".utf8),
        [0, 0, 0, 16] + Array(#"{"type":"ping"}"#.utf8) + [0x7D],
    ]

    init(loop: Loop, plan: Plan, tally: HTTPCrowdTally) {
        self.loop = loop
        self.plan = plan
        self.tally = tally
        queue = OpenQueue(limit: plan.concurrency)
        pacer = UV.Timer(loop: loop)
    }

    func start() throws(UVError) -> InboxSender<HTTPCrowdOrder> {
        let inbox = try AsyncInbox<HTTPCrowdOrder>(loop: loop) { [unowned self] orders in
            for order in orders {
                switch order {
                case .start: self.beginRound()
                case .stop: self.endRound()
                case .finish: self.finish()
                }
            }
        }
        self.inbox = inbox
        return inbox.sender
    }

    private func beginRound() {
        guard !running else { return }
        running = true
        tally.idle.store(false, ordering: .relaxed)
        queue = OpenQueue(limit: plan.concurrency)
        for number in 0..<plan.idle { queue.add { [unowned self] in self.openIdle(number) } }
        pacer.start(timeoutMs: 10, repeatMs: 10) { [unowned self] in
            for _ in 0..<self.plan.badPerTick { self.sendBad() }
        }
    }

    private func track(_ stream: TCPStream) { streams[ObjectIdentifier(stream)] = (stream, .connecting) }

    private func mark(_ stream: TCPStream, _ role: Role) { streams[ObjectIdentifier(stream)]?.role = role }

    private func forget(_ stream: TCPStream) -> Bool {
        guard streams.removeValue(forKey: ObjectIdentifier(stream)) != nil else { return false }
        stream.close()
        return true
    }

    private func openIdle(_ number: Int) {
        let stream = TCPStream(loop: loop)
        track(stream)
        let startNs = Loop.hrtime
        stream.connect(to: plan.address) { [unowned self] error in
            self.queue.finished()
            guard self.streams[ObjectIdentifier(stream)] != nil else { return }
            if error != nil {
                self.tally.connectFailures.add(1, ordering: .relaxed)
                _ = self.forget(stream)
                return
            }
            self.tally.opened.add(1, ordering: .relaxed)
            self.mark(stream, .idle)
            do {
                try stream.startReading(onData: { [unowned self] bytes in
                    if bytes.starts(with: "HTTP/1.1 408".utf8) { self.tally.slowHeads408.add(1, ordering: .relaxed) }
                }, onEnd: { [unowned self] _ in
                    if self.forget(stream) {
                        self.tally.closedByServer.add(1, ordering: .relaxed)
                        _ = self.closeTimes.record(max(1, (Loop.hrtime &- startNs) / 1_000))
                    }
                })
            } catch {
                _ = self.forget(stream)
                return
            }
            if number % 10 == 9 {
                stream.enqueue(OwnedBytes(Array("GET /healthz HTTP/1.1\r\nHost:".utf8)))
                stream.flush()
            }
        }
    }

    private func sendBad() {
        let request = Self.badRequests[badCounter % Self.badRequests.count]
        badCounter += 1
        let stream = TCPStream(loop: loop)
        track(stream)
        tally.badSent.add(1, ordering: .relaxed)
        var status: Int?
        stream.connect(to: plan.address) { [unowned self] error in
            guard self.streams[ObjectIdentifier(stream)] != nil else { return }
            if error != nil {
                self.tally.connectFailures.add(1, ordering: .relaxed)
                _ = self.forget(stream)
                return
            }
            stream.onWriteError = { _ in }
            self.mark(stream, .bad)
            do {
                try stream.startReading(onData: { bytes in
                    if status == nil, bytes.count >= 12, bytes.starts(with: "HTTP/1.1 ".utf8) {
                        status = Int(String(decoding: bytes[9..<12], as: UTF8.self)) ?? 0
                    }
                }, onEnd: { [unowned self] _ in
                    guard self.forget(stream) else { return }
                    switch status {
                    case 400?: self.tally.bad400.add(1, ordering: .relaxed)
                    case 405?: self.tally.bad405.add(1, ordering: .relaxed)
                    case 431?: self.tally.bad431.add(1, ordering: .relaxed)
                    case nil: self.tally.badClosedBare.add(1, ordering: .relaxed)
                    default: self.tally.badOtherStatus.add(1, ordering: .relaxed)
                    }
                })
            } catch {
                _ = self.forget(stream)
                return
            }
            stream.enqueue(OwnedBytes(request))
            stream.flush()
        }
    }

    private func endRound() {
        pacer.stop()
        queue.cancel()
        running = false
        // What is still open: idle connections (held or queued by the
        // server), connects under way, bad requests not answered yet.
        for (stream, role) in streams.values {
            stream.close()
            switch role {
            case .idle: tally.heldAtEnd.add(1, ordering: .relaxed)
            case .connecting: tally.connectingAtEnd.add(1, ordering: .relaxed)
            case .bad: tally.badUnansweredAtEnd.add(1, ordering: .relaxed)
            }
        }
        streams = [:]
        tally.idle.store(true, ordering: .relaxed)
    }

    private func finish() {
        endRound()
        tally.storeLatency(closeTimes)
        pacer.close()
        inbox?.close()
    }
}
