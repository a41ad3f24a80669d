import Histogram
import UV

/// What one commands worker does; fixed before its thread starts.
struct CommandsPlan: Sendable {
    let index: Int
    let address: SocketAddress
    /// `laps/load-<run>` (or `timers/…`, `starport/…`); each client appends `-<worker>-<n>`.
    let channelPrefix: String
    let clients: Int
    /// Commands each client keeps in flight (`--pipeline`).
    let pipeline: Int
    /// When it sends more (`--refill`).
    let refill: CommandsRefill
    /// What each command is (`--workload`).
    let workload: CommandsWorkload
    /// Items each client adds to its channel before it reports ready (`--preload`).
    let preload: Int

    /// Preload commands each client keeps in flight: the pipeline, at least 64.
    var preloadWindow: Int { max(pipeline, 64) }
}

/// One event loop's share of a commands run: some clients, each with its
/// own channel (a lap stopwatch, a timer list or a dispatch board), each
/// keeping `pipeline` commands in flight (it sends that many, then one more
/// per reply). A client first fills its channel with `preload` items, then
/// counts as ready. Lives on its loop's thread only.
final class CommandsWorker {
    private let loop: Loop
    private let plan: CommandsPlan
    private let tally: CommandsTally
    private let budget: CommandBudget
    private var clients: [Client] = []
    private var sending = false
    private var latency = Histogram<UInt64>.microseconds()
    private let heartbeat: Timer
    private var inbox: AsyncInbox<WorkerOrder>?

    /// One connection driving one channel.
    final class Client {
        let connection: LoadConnection
        let channel: String
        /// `hello` answered.
        var greeted = false
        /// Greeted and preloaded: measured commands may go.
        var ready = false
        /// Measured commands sent so far (the workload's step of the next one).
        var step = 0
        /// Preload commands sent and answered.
        var preloadSent = 0
        var preloadAcked = 0
        /// Commands sent and not answered yet, oldest first; tagged true for a preload command.
        var window: RequestWindow<Bool>
        var nextId = 2
        /// The run is over and its uncounted `stop` is on the way: the
        /// next reply closes the connection.
        var stopping = false
        init(connection: LoadConnection, channel: String, pipeline: Int) {
            self.connection = connection
            self.channel = channel
            window = RequestWindow(capacity: pipeline)
        }
    }

    init(loop: Loop, plan: CommandsPlan, tally: CommandsTally, budget: CommandBudget) {
        self.loop = loop
        self.plan = plan
        self.tally = tally
        self.budget = budget
        heartbeat = Timer(loop: loop)
    }

    /// Creates the inbox (returned for other threads) and opens every connection.
    func start() throws(UVError) -> InboxSender<WorkerOrder> {
        let inbox = try AsyncInbox<WorkerOrder>(loop: loop) { [unowned self] orders in
            for order in orders { self.handle(order) }
        }
        self.inbox = inbox
        // The server closes connections silent for 2 × heartbeat_ms (default 15 s);
        // only idle clients (before the start, after the stop) need a ping.
        heartbeat.start(timeoutMs: 5_000, repeatMs: 5_000) { [unowned self] in
            for client in self.clients where client.ready && client.window.isEmpty {
                client.connection.send(#"{"type":"ping"}"#)
            }
        }
        for number in 0..<plan.clients { open(number) }
        return inbox.sender
    }

    private func open(_ number: Int) {
        let connection = LoadConnection(loop: loop)
        let client = Client(connection: connection, channel: "\(plan.channelPrefix)-\(plan.index)-\(number)",
                            pipeline: plan.pipeline)
        clients.append(client)
        connection.onFailure = { [unowned self] reason in self.tally.recordError("client \(client.channel): \(reason)") }
        connection.onFrame = { [unowned self, unowned client] body in self.received(body, by: client) }
        connection.open(plan.address) { [unowned self] in
            connection.send(LoadConnection.hello(name: "load-cmd-\(self.plan.index)-\(number)"))
        }
    }

    private func received(_ body: UnsafeRawBufferPointer, by client: Client) {
        switch ServerFrame.classify(body) {
        case .reply(id: 1?, error: nil) where !client.greeted:
            client.greeted = true
            if plan.preload > 0 {
                tally.notePreloadStart(Loop.hrtime)
                fillPreload(client)
            } else {
                becomeReady(client)
            }
        case .reply(id: 1?, let error?) where !client.greeted:
            tally.recordError("\(client.channel): hello refused: \(error)")
        case .reply(_?, _) where client.stopping:
            client.connection.close()
        case .reply(let id?, let error):
            guard let command = client.window.removeOldest(answeredBy: id) else {
                tally.recordError("\(client.channel): \(client.window.mismatch(id))")
                return
            }
            if let error {
                tally.recordError("\(client.channel) \(command.tag ? "preload " : "")request \(id) refused: \(error)")
                return
            }
            let now = Loop.hrtime
            if command.tag {
                client.preloadAcked += 1
                tally.preloaded.add(1, ordering: .relaxed)
                if client.preloadAcked == plan.preload {
                    tally.notePreloadEnd(now)
                    becomeReady(client)
                } else {
                    fillPreload(client)
                }
                return
            }
            _ = latency.record(max(1, (now &- command.sentNs) / 1_000))
            tally.acknowledged.add(1, ordering: .relaxed)
            tally.lastAckNs.store(now, ordering: .relaxed)
            if sending, plan.refill == .window || client.window.count == 0 { fill(client) }
        case .reply(nil, let error):
            tally.recordError("\(client.channel): reply without an id (\(error ?? "ok"))")
        case .failure(let reason):
            tally.recordError("\(client.channel): \(reason)")
        case .loadMessage, .otherPush:
            break
        }
    }

    private func becomeReady(_ client: Client) {
        client.ready = true
        tally.ready.add(1, ordering: .relaxed)
        if sending { fill(client) }
    }

    /// Sends preload commands (not counted, not timed) until the client has
    /// the preload window in flight or all `preload` are sent.
    private func fillPreload(_ client: Client) {
        guard !client.connection.isClosed else { return }
        var sent = 0
        while client.window.count < plan.preloadWindow, client.preloadSent < plan.preload {
            let id = client.nextId
            client.nextId += 1
            client.window.append(id: id, sentNs: Loop.hrtime, tag: true)
            client.connection.enqueue(body: Array(plan.workload.preloadBody(id: id, channel: client.channel,
                                                                            index: client.preloadSent).utf8))
            client.preloadSent += 1
            sent += 1
        }
        if sent > 0 { client.connection.flush() }
    }

    /// Sends commands until the client has `pipeline` in flight or the
    /// budget is spent; one write for all of them.
    private func fill(_ client: Client) {
        guard client.ready, !client.connection.isClosed else { return }
        var sent = 0
        while client.window.count < plan.pipeline, budget.claim() {
            let id = client.nextId
            client.nextId += 1
            client.window.append(id: id, sentNs: Loop.hrtime, tag: false)
            client.connection.enqueue(body: Array(plan.workload.body(id: id, channel: client.channel, step: client.step,
                                                                     preloaded: plan.preload).utf8))
            client.step += 1
            sent += 1
        }
        guard sent > 0 else { return }
        tally.sent.add(sent, ordering: .relaxed)
        client.connection.flush()
    }

    private func handle(_ order: WorkerOrder) {
        switch order {
        case .startPublishing:
            sending = true
            for client in clients { fill(client) }
        case .stopPublishing:
            sending = false
        case .progress:
            break
        case .finish:
            tally.storeLatency(latency)
            inbox?.close()
            var stopping = false
            for client in clients { stopping = close(client) || stopping }
            guard stopping else { return heartbeat.close() }
            // A server that does not answer the stops within 2 s is left to
            // its idle timeout.
            heartbeat.start(timeoutMs: 2_000) { [unowned self] in
                for client in clients { client.connection.close() }
                heartbeat.close()
            }
        }
    }

    /// Closes `client` at the end of the run. A lap stopwatch left running
    /// (the client's last command a `start` or a `lap`, all answered) is
    /// first stopped, uncounted, so that no stopwatch of the run goes on
    /// ticking on the server; true when that `stop` was sent (its reply
    /// closes the connection).
    private func close(_ client: Client) -> Bool {
        let running = (1...3).contains(client.step % CommandsWorkload.cycle.count)
        guard plan.workload == .laps, client.ready, running, client.window.isEmpty, !client.connection.isClosed else {
            client.connection.close()
            return false
        }
        client.stopping = true
        client.connection.onFailure = nil  // the run's figures are taken
        client.connection.send(#"{"type":"command","id":\#(client.nextId),"channel":"\#(client.channel)","action":"stop"}"#)
        return true
    }
}
