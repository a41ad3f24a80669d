import Histogram
import UV

/// What one commands worker does; fixed before its thread starts.
struct CommandsPlan: Sendable {
    let index: Int
    let address: SocketAddress
    /// `laps/load-<run>`; each client appends `-<worker>-<n>`.
    let channelPrefix: String
    let clients: Int
}

/// One event loop's share of a commands run: some clients, each with its
/// own lap stopwatch, each with one command in flight at a time.
/// Lives on its loop's thread only.
final class CommandsWorker {
    /// A valid stopwatch cycle from idle: every action is one durable event.
    static let cycle = ["start", "lap", "lap", "stop", "reset"]

    private let loop: Loop
    private let plan: CommandsPlan
    private let tally: CommandsTally
    private let budget: CommandBudget
    private var clients: [Client] = []
    private var sending = false
    private var latency = Histogram<UInt64>.microseconds()
    private let heartbeat: Timer
    private var inbox: AsyncInbox<WorkerOrder>?

    /// One connection driving one stopwatch.
    final class Client {
        let connection: LoadConnection
        let channel: String
        var ready = false
        /// Next step in `cycle`.
        var step = 0
        /// Id of the command in flight, or nil when idle.
        var inFlight: Int?
        var nextId = 2
        var sentNs: UInt64 = 0
        init(connection: LoadConnection, channel: String) {
            self.connection = connection
            self.channel = channel
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
            for client in self.clients where client.ready && client.inFlight == nil { client.connection.send(#"{"type":"ping"}"#) }
        }
        for number in 0..<plan.clients { open(number) }
        return inbox.sender
    }

    private func open(_ number: Int) {
        let connection = LoadConnection(loop: loop)
        let client = Client(connection: connection, channel: "\(plan.channelPrefix)-\(plan.index)-\(number)")
        clients.append(client)
        connection.onFailure = { [unowned self] reason in self.tally.recordError("client \(client.channel): \(reason)") }
        connection.onFrame = { [unowned self, unowned client] body in self.received(body, by: client) }
        connection.open(plan.address) { [unowned self] in
            connection.send(#"{"type":"hello","id":1,"protocol":1,"client":"outatime-load/0.1","name":"load-cmd-\#(self.plan.index)-\#(number)"}"#)
        }
    }

    private func received(_ body: UnsafeRawBufferPointer, by client: Client) {
        switch ServerFrame.classify(body) {
        case .reply(id: 1?, error: nil):
            client.ready = true
            tally.ready.add(1, ordering: .relaxed)
            if sending { send(client) }
        case .reply(let id?, nil) where id == client.inFlight:
            let now = Loop.hrtime
            _ = latency.record(max(1, (now &- client.sentNs) / 1_000))
            client.inFlight = nil
            client.step = (client.step + 1) % Self.cycle.count
            tally.acknowledged.add(1, ordering: .relaxed)
            tally.lastAckNs.store(now, ordering: .relaxed)
            if sending { send(client) }
        case .reply(let id, let error?):
            client.inFlight = nil
            tally.recordError("\(client.channel) request \(id.map(String.init) ?? "?") refused: \(error)")
        case .reply(let id, nil):
            tally.recordError("\(client.channel): unexpected reply id \(id.map(String.init) ?? "none")")
        case .failure(let reason):
            tally.recordError("\(client.channel): \(reason)")
        case .loadMessage, .otherPush:
            break
        }
    }

    /// Sends the client's next command if the budget allows.
    private func send(_ client: Client) {
        guard client.ready, client.inFlight == nil, !client.connection.isClosed, budget.claim() else { return }
        let id = client.nextId
        client.nextId += 1
        client.inFlight = id
        client.sentNs = Loop.hrtime
        tally.sent.add(1, ordering: .relaxed)
        client.connection.send(#"{"type":"command","id":\#(id),"channel":"\#(client.channel)","action":"\#(Self.cycle[client.step])"}"#)
    }

    private func handle(_ order: WorkerOrder) {
        switch order {
        case .startPublishing:
            sending = true
            for client in clients { send(client) }
        case .stopPublishing:
            sending = false
        case .progress:
            break
        case .finish:
            tally.storeLatency(latency)
            for client in clients { client.connection.close() }
            heartbeat.close()
            inbox?.close()
        }
    }
}
