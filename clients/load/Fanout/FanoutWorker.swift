import Histogram
import UV

/// What one fan-out worker does; fixed before its thread starts.
struct FanoutPlan: Sendable {
    let index: Int
    /// The publisher's server.
    let address: SocketAddress
    /// The servers subscribers connect to, round-robin by subscriber number over the whole run.
    let subscriberAddresses: [SocketAddress]
    /// The run-wide number of this worker's first subscriber.
    let firstSubscriber: Int
    let channel: String
    let subscribers: Int
    let messages: Int
    let payloadSize: Int
    let window: Int
    /// Publishes per second, or nil to publish as fast as the window allows.
    let rate: Double?
    /// True for the one worker that also runs the publisher.
    let hostsPublisher: Bool
}

/// One event loop's share of a fan-out run: some subscribers and maybe the
/// publisher. Lives on its loop's thread only.
final class FanoutWorker {
    private let loop: Loop
    private let plan: FanoutPlan
    private let tally: FanoutTally
    private let tallies: [FanoutTally]
    private let directory: WorkerDirectory<WorkerOrder>
    private var subscribers: [Subscriber] = []
    private var publisher: LoadConnection?
    private var publisherReady = false
    private var publishing = false
    private var publishStartNs: UInt64 = 0
    private var sent = 0
    private var latency = Histogram<UInt64>.microseconds()
    private var delivered = 0
    private var duplicated = 0
    private var lastDeliveryNs: UInt64 = 0
    private var dirty = false
    private var reportedSlowest = -1
    private let prepare: Prepare
    private let heartbeat: Timer
    private let pacer: Timer
    private var inbox: AsyncInbox<WorkerOrder>?
    private let publishPrefix: [UInt8]

    /// One subscribed connection and the seqs it has received (a bitmap).
    final class Subscriber {
        let connection: LoadConnection
        var seen: [UInt64]
        var distinct = 0
        /// `hello` answered: heartbeats may go out (before it they are refused).
        var ready = false
        init(connection: LoadConnection, messages: Int) {
            self.connection = connection
            seen = [UInt64](repeating: 0, count: (messages + 63) / 64)
        }
    }

    init(loop: Loop, plan: FanoutPlan, tally: FanoutTally, tallies: [FanoutTally], directory: WorkerDirectory<WorkerOrder>) {
        self.loop = loop
        self.plan = plan
        self.tally = tally
        self.tallies = tallies
        self.directory = directory
        prepare = Prepare(loop: loop)
        heartbeat = Timer(loop: loop)
        pacer = Timer(loop: loop)
        publishPrefix = Array(#"{"type":"publish","channel":"\#(plan.channel)","data":"L "#.utf8)
    }

    /// Creates the inbox (returned for other threads) and opens every connection.
    func start() throws(UVError) -> InboxSender<WorkerOrder> {
        let inbox = try AsyncInbox<WorkerOrder>(loop: loop) { [unowned self] orders in
            for order in orders { self.handle(order) }
        }
        self.inbox = inbox
        prepare.start { [unowned self] in self.everyIteration() }
        // The server closes connections silent for 2 × heartbeat_ms (default 15 s).
        heartbeat.start(timeoutMs: 5_000, repeatMs: 5_000) { [unowned self] in self.ping() }
        for number in 0..<plan.subscribers { openSubscriber(number) }
        if plan.hostsPublisher { openPublisher() }
        return inbox.sender
    }


    private func openSubscriber(_ number: Int) {
        let connection = LoadConnection(loop: loop)
        let subscriber = Subscriber(connection: connection, messages: plan.messages)
        subscribers.append(subscriber)
        connection.onFailure = { [unowned self] reason in self.tally.recordError("subscriber: \(reason)") }
        connection.onFrame = { [unowned self, unowned subscriber] body in self.received(body, by: subscriber) }
        let address = plan.subscriberAddresses[(plan.firstSubscriber + number) % plan.subscriberAddresses.count]
        connection.open(address) { [unowned self] in
            connection.enqueue(body: Array(LoadConnection.hello(name: "load-sub-\(self.plan.index)-\(number)").utf8))
            connection.send(#"{"type":"subscribe","id":2,"channel":"\#(self.plan.channel)"}"#)
        }
    }

    private func openPublisher() {
        let connection = LoadConnection(loop: loop)
        publisher = connection
        connection.onFailure = { [unowned self] reason in self.tally.recordError("publisher: \(reason)") }
        connection.onFrame = { [unowned self] body in
            switch ServerFrame.classify(body) {
            case .reply(id: 1?, error: nil):
                self.publisherReady = true
                self.tally.ready.add(1, ordering: .relaxed)
            case .reply(_, let error?):
                self.tally.recordError("publisher request refused: \(error)")
            case .failure(let reason):
                self.tally.recordError("publisher: \(reason)")
            default:
                break
            }
        }
        connection.open(plan.address) { [unowned self] in connection.send(LoadConnection.hello(name: "load-publisher")) }
    }

    private func received(_ body: UnsafeRawBufferPointer, by subscriber: Subscriber) {
        switch ServerFrame.classify(body) {
        case .loadMessage(let seq, let sentNs):
            let now = Loop.hrtime
            guard seq >= 0, seq < plan.messages else {
                tally.recordError("message with seq \(seq) outside 0..<\(plan.messages)")
                return
            }
            let word = seq >> 6
            let bit = UInt64(1) << UInt64(seq & 63)
            if subscriber.seen[word] & bit != 0 {
                duplicated += 1
            } else {
                subscriber.seen[word] |= bit
                subscriber.distinct += 1
                delivered += 1
                _ = latency.record(max(1, (now &- sentNs) / 1_000))
            }
            lastDeliveryNs = now
            dirty = true
        case .reply(id: 1?, error: nil):
            subscriber.ready = true
        case .reply(id: 2?, error: nil):
            tally.ready.add(1, ordering: .relaxed)
        case .reply(_, let error?):
            tally.recordError("subscriber request refused: \(error)")
        case .failure(let reason):
            tally.recordError("subscriber: \(reason)")
        case .reply, .otherPush:
            break
        }
    }

    /// Once per loop iteration: publish the counters, then let the publisher
    /// use any room the window gained.
    private func everyIteration() {
        if dirty {
            dirty = false
            tally.delivered.store(delivered, ordering: .relaxed)
            tally.duplicated.store(duplicated, ordering: .relaxed)
            tally.lastDeliveryNs.store(lastDeliveryNs, ordering: .relaxed)
            var slowest = Int.max
            for subscriber in subscribers where subscriber.distinct < slowest { slowest = subscriber.distinct }
            tally.slowest.store(slowest, ordering: .relaxed)
            if slowest != reportedSlowest {
                reportedSlowest = slowest
                if !plan.hostsPublisher { directory.broadcast(.progress) }
            }
        }
        if plan.hostsPublisher { pump() }
    }

    /// Sends as many publishes as the window (and the rate) allow.
    private func pump() {
        guard publishing, publisherReady, let publisher, sent < plan.messages else { return }
        var slowest = Int.max
        for other in tallies where other.subscriberCount > 0 {
            slowest = min(slowest, other.slowest.load(ordering: .relaxed))
        }
        if slowest == Int.max { slowest = sent }
        var limit = min(plan.messages, slowest + plan.window)
        if let rate = plan.rate {
            let elapsed = Double(Loop.hrtime - publishStartNs) / 1e9
            limit = min(limit, Int(rate * elapsed) + 1)
        }
        guard sent < limit else { return }
        while sent < limit {
            publisher.enqueue(body: publishBody(seq: sent, sentNs: Loop.hrtime))
            sent += 1
        }
        publisher.flush()
        tally.published.store(sent, ordering: .relaxed)
    }

    /// `{"type":"publish","channel":C,"data":"L <seq> <ns> xxx…"}`, data padded to the payload size.
    private func publishBody(seq: Int, sentNs: UInt64) -> [UInt8] {
        let stamp = "\(seq) \(sentNs) "
        let padding = max(0, plan.payloadSize - 2 - stamp.utf8.count)
        var body = publishPrefix
        body.reserveCapacity(publishPrefix.count + stamp.utf8.count + padding + 2)
        body.append(contentsOf: stamp.utf8)
        body.append(contentsOf: repeatElement(UInt8(ascii: "x"), count: padding))
        body.append(contentsOf: #""}"#.utf8)
        return body
    }

    private func ping() {
        // Only connections whose `hello` was answered: a ping before it is refused.
        for subscriber in subscribers where subscriber.ready { subscriber.connection.send(#"{"type":"ping"}"#) }
        if publisherReady { publisher?.send(#"{"type":"ping"}"#) }
    }

    private func handle(_ order: WorkerOrder) {
        switch order {
        case .startPublishing:
            publishing = true
            publishStartNs = Loop.hrtime
            if let rate = plan.rate, rate > 0 {
                pacer.start(timeoutMs: 1, repeatMs: 1) { [unowned self] in self.pump() }
            }
            pump()
        case .stopPublishing:
            publishing = false
            pacer.stop()
        case .progress:
            if plan.hostsPublisher { pump() }
        case .finish:
            finish()
        }
    }

    private func finish() {
        everyIteration()
        tally.storeLatency(latency)
        for subscriber in subscribers { subscriber.connection.close() }
        publisher?.close()
        prepare.close()
        heartbeat.close()
        pacer.close()
        inbox?.close()
    }
}
