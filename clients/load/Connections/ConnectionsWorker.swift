import Histogram
import Synchronization
import UV

/// What one connections worker has seen so far, readable from the
/// coordinating thread (relaxed atomics: counters for progress and the end).
final class ConnectionsTally: WorkerTally, @unchecked Sendable {
    /// Connections this worker opens (fixed at start).
    let connectionCount: Int
    /// Connections whose `hello` and `subscribe` were answered ok.
    let subscribed = Atomic<Int>(0)
    /// Connections that failed to connect or were refused or closed.
    let failed = Atomic<Int>(0)
    /// Monotonic time the last connection of this worker completed, ns.
    let lastOpenNs = Atomic<UInt64>(0)

    init(connectionCount: Int) { self.connectionCount = connectionCount }
}

/// Orders to a connections worker, posted from the coordinating thread.
enum ConnectionsOrder: Sendable {
    /// Close everything and let the loop exit.
    case finish
}

/// What one connections worker does; fixed before its thread starts.
struct ConnectionsPlan: Sendable {
    let index: Int
    let address: SocketAddress
    /// `starport/load-<run>`; connection g subscribes to `<prefix>-<g mod channels>`.
    let channelPrefix: String
    let channels: Int
    /// The run-wide numbers of this worker's connections (for channel and name).
    let numbers: [Int]
    /// Handshakes in flight at most on this worker.
    let concurrency: Int
}

/// One event loop's share of a connections run: opens its connections at a
/// bounded concurrency, each `hello` + `subscribe`, then keeps them idle
/// (a heartbeat `ping` every 5 s). Lives on its loop's thread only.
final class ConnectionsWorker {
    private let loop: Loop
    private let plan: ConnectionsPlan
    private let tally: ConnectionsTally
    private let queue: OpenQueue
    private var connections: [LoadConnection] = []
    /// Connections whose `subscribe` was answered: only these get heartbeats
    /// (a `ping` queued before `hello` would be refused `hello_required`).
    private var subscribed: [LoadConnection] = []
    private var latency = Histogram<UInt64>.microseconds()
    private let heartbeat: Timer
    private var inbox: AsyncInbox<ConnectionsOrder>?
    private var finishing = false

    init(loop: Loop, plan: ConnectionsPlan, tally: ConnectionsTally) {
        self.loop = loop
        self.plan = plan
        self.tally = tally
        queue = OpenQueue(limit: plan.concurrency)
        heartbeat = Timer(loop: loop)
    }

    /// Creates the inbox (returned for other threads) and queues every connection.
    func start() throws(UVError) -> InboxSender<ConnectionsOrder> {
        let inbox = try AsyncInbox<ConnectionsOrder>(loop: loop) { [unowned self] orders in
            for order in orders {
                switch order {
                case .finish: self.finish()
                }
            }
        }
        self.inbox = inbox
        // The server closes connections silent for 2 × heartbeat_ms (default 15 s).
        heartbeat.start(timeoutMs: 5_000, repeatMs: 5_000) { [unowned self] in
            for connection in self.subscribed where !connection.isClosed { connection.send(#"{"type":"ping"}"#) }
        }
        for number in plan.numbers { queue.add { [unowned self] in self.open(number) } }
        return inbox.sender
    }

    private func open(_ number: Int) {
        let connection = LoadConnection(loop: loop)
        connections.append(connection)
        let channel = "\(plan.channelPrefix)-\(number % plan.channels)"
        let startNs = Loop.hrtime
        var done = false
        func fail(_ reason: String) {
            tally.recordError("connection \(number) (\(channel)): \(reason)")
            if !done {
                done = true
                tally.failed.add(1, ordering: .relaxed)
                queue.finished()
            }
            connection.close()
        }
        connection.onFailure = { reason in fail(reason) }
        connection.onFrame = { [unowned self] body in
            switch ServerFrame.classify(body) {
            case .reply(id: 2?, error: nil) where !done:
                done = true
                let now = Loop.hrtime
                _ = self.latency.record(max(1, (now &- startNs) / 1_000))
                self.subscribed.append(connection)
                self.tally.subscribed.add(1, ordering: .relaxed)
                self.tally.lastOpenNs.store(now, ordering: .relaxed)
                self.queue.finished()
            case .reply(let id, let error?):
                fail("request \(id.map(String.init) ?? "?") refused: \(error)")
            case .failure(let reason):
                fail(reason)
            default:
                break
            }
        }
        connection.open(plan.address) {
            connection.enqueue(body: Array(LoadConnection.hello(name: "load-conn-\(number)").utf8))
            connection.send(#"{"type":"subscribe","id":2,"channel":"\#(channel)"}"#)
        }
    }

    private func finish() {
        guard !finishing else { return }
        finishing = true
        queue.cancel()
        tally.storeLatency(latency)
        for connection in connections { connection.close() }
        heartbeat.close()
        inbox?.close()
    }
}
