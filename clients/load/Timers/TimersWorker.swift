import struct Foundation.Date
import Histogram
import UV

/// What one timers worker does; fixed before its thread starts.
struct TimersPlan: Sendable {
    let index: Int
    let address: SocketAddress
    /// `timers/load-<run>`; list n is `<prefix>-<n>`.
    let channelPrefix: String
    /// The lists whose viewer this worker runs, with how many timers each gets.
    let viewers: [(list: Int, timers: Int)]
    /// The watchers this worker runs: (list, watcher number within the list).
    let watchers: [(list: Int, number: Int)]
    /// `remaining_s` of every added timer: longer than setup and measurement together.
    let remainingS: Int
    /// `add` commands in flight at most per viewer connection.
    let pipeline: Int
    /// Connections in their opening handshake at most on this worker.
    let concurrency: Int
    /// Lists in the whole run: list n's first countdown starts n / lists of
    /// a second into the start phase, so the lists' tick seconds are spread
    /// over the second as countdowns started by people would be, not all
    /// due in the same instant.
    let totalLists: Int
}

/// One event loop's share of a timers run: some lists' viewer connections
/// (each subscribes to its list, adds the list's timers with several `add`s
/// in flight, then views every timer with `start` so that it runs) and some
/// watcher connections (each subscribes to one list and checks every tick).
/// Lives on its loop's thread only.
final class TimersWorker {
    private let loop: Loop
    private let plan: TimersPlan
    private let tally: TimersTally
    private let queue: OpenQueue
    private var viewers: [Viewer] = []
    private var watchers: [Watcher] = []
    private var measuring = false
    private var starting = false
    /// When this worker began the start phase (`Loop.hrtime`).
    private var startOriginNs: UInt64 = 0
    private var lateness = Histogram<UInt64>.microseconds()
    private let heartbeat: Timer
    /// Which fiftieth of the connections the next heartbeat tick pings.
    private var heartbeatSlot = 0
    private let starter: Timer
    private var inbox: AsyncInbox<TimersOrder>?
    private var finished = false

    /// What a viewer is waiting for, by request id.
    enum Request { case hello, subscribe, add, start }

    /// The connection that fills one list and views all its timers.
    final class Viewer {
        let connection: LoadConnection
        let list: Int
        let channel: String
        let timerCount: Int
        var pending: [Int: Request] = [:]
        var nextRequestID = 1
        var addsSent = 0
        var addsInFlight = 0
        /// Timer ids from the `add` replies, in list order.
        var ids: [Int] = []
        /// Next timer in `ids` to start.
        var startIndex = 0
        var startInFlight = false
        /// `hello` answered: heartbeats may go out (before it they are refused).
        var ready = false
        init(connection: LoadConnection, list: Int, channel: String, timerCount: Int) {
            self.connection = connection
            self.list = list
            self.channel = channel
            self.timerCount = timerCount
        }
    }

    /// One subscriber of a list that checks every tick.
    final class Watcher {
        let connection: LoadConnection
        let list: Int
        let number: Int
        /// The list's first started timer: the tick series runs on its seconds.
        var anchorID: Int?
        var anchorRemaining = 0
        /// The reference countdown's seconds gone at the last tick.
        var lastSecond: Int?
        /// Last remaining_s seen per timer id (-1: none yet).
        var last: [Int] = []
        /// `hello` answered: heartbeats may go out (before it they are refused).
        var ready = false
        init(connection: LoadConnection, list: Int, number: Int) {
            self.connection = connection
            self.list = list
            self.number = number
        }
    }

    init(loop: Loop, plan: TimersPlan, tally: TimersTally) {
        self.loop = loop
        self.plan = plan
        self.tally = tally
        queue = OpenQueue(limit: plan.concurrency)
        heartbeat = Timer(loop: loop)
        starter = Timer(loop: loop)
    }

    /// Creates the inbox (returned for other threads) and queues every connection.
    func start() throws(UVError) -> InboxSender<TimersOrder> {
        let inbox = try AsyncInbox<TimersOrder>(loop: loop) { [unowned self] orders in
            for order in orders { self.handle(order) }
        }
        self.inbox = inbox
        // The server closes connections silent for 2 × heartbeat_ms (default
        // 15 s): every connection pings once per 5 s, spread over those 5 s
        // (a fiftieth every 100 ms) as independent clients' heartbeats are.
        // Eleven thousand pings in one burst would hold up the server's loop
        // for tens of milliseconds every 5 s and show up as tick lateness.
        heartbeat.start(timeoutMs: 100, repeatMs: 100) { [unowned self] in
            let slot = self.heartbeatSlot % 50
            self.heartbeatSlot += 1
            for (index, viewer) in self.viewers.enumerated()
            where index % 50 == slot && viewer.ready && !viewer.connection.isClosed {
                viewer.connection.send(#"{"type":"ping"}"#)
            }
            for (index, watcher) in self.watchers.enumerated()
            where index % 50 == slot && watcher.ready && !watcher.connection.isClosed {
                watcher.connection.send(#"{"type":"ping"}"#)
            }
        }
        // Viewers first: filling the lists is the long part of the setup.
        for (list, timers) in plan.viewers { queue.add { [unowned self] in self.openViewer(list: list, timers: timers) } }
        for (list, number) in plan.watchers { queue.add { [unowned self] in self.openWatcher(list: list, number: number) } }
        return inbox.sender
    }

    private func hello(_ name: String) -> String {
        #"{"type":"hello","id":1,"protocol":1,"client":"outatime-load/0.1","name":"\#(name)"}"#
    }

    // MARK: Viewers

    /// Wires `connection`'s callbacks: every frame goes to `received`, which
    /// says when the connection's setup handshake is complete; the open
    /// queue hears once that it ended, on completion or on the first failure.
    private func handshake(_ connection: LoadConnection, name: String,
                           received: @escaping (UnsafeRawBufferPointer) -> Bool) {
        var handshaking = true
        let ended = { [unowned self] in
            guard handshaking else { return }
            handshaking = false
            self.queue.finished()
        }
        connection.onFailure = { [unowned self] reason in
            self.tally.recordError("\(name): \(reason)")
            ended()
        }
        connection.onFrame = { body in
            if received(body) { ended() }
        }
    }

    private func openViewer(list: Int, timers: Int) {
        let connection = LoadConnection(loop: loop)
        let viewer = Viewer(connection: connection, list: list, channel: "\(plan.channelPrefix)-\(list)", timerCount: timers)
        viewers.append(viewer)
        handshake(connection, name: "viewer of \(viewer.channel)") { [unowned self, unowned viewer] body in
            self.viewerReceived(body, viewer)
        }
        connection.open(plan.address) { [unowned self] in
            self.send(.hello, self.hello("load-viewer-\(list)"), on: viewer, flush: false)
            self.send(.subscribe, #"{"type":"subscribe","id":2,"channel":"\#(viewer.channel)"}"#, on: viewer)
        }
    }

    /// Registers request `kind` under the viewer's next id and queues `json` (which must carry that id).
    private func send(_ kind: Request, _ json: String, on viewer: Viewer, flush: Bool = true) {
        viewer.pending[viewer.nextRequestID] = kind
        viewer.nextRequestID += 1
        viewer.connection.enqueue(body: Array(json.utf8))
        if flush { viewer.connection.flush() }
    }

    /// Handles one frame to a viewer; true once its subscription is answered.
    private func viewerReceived(_ body: UnsafeRawBufferPointer, _ viewer: Viewer) -> Bool {
        switch TimerFrame.classify(body) {
        case .reply(let id?, let timerID, let error):
            guard let kind = viewer.pending.removeValue(forKey: id) else {
                tally.recordError("viewer of \(viewer.channel): reply to unknown request \(id)")
                return false
            }
            if let error {
                tally.recordError("viewer of \(viewer.channel): \(kind) refused: \(error)")
                return kind == .subscribe
            }
            switch kind {
            case .hello:
                viewer.ready = true
                return false
            case .subscribe:
                tally.viewersReady.add(1, ordering: .relaxed)
                pumpAdds(viewer)
                return true
            case .add:
                guard let timerID else {
                    tally.recordError("viewer of \(viewer.channel): add reply without a timer id")
                    return false
                }
                viewer.ids.append(timerID)
                viewer.addsInFlight -= 1
                tally.added.add(1, ordering: .relaxed)
                pumpAdds(viewer)
            case .start:
                viewer.startInFlight = false
                viewer.startIndex += 1
                tally.started.add(1, ordering: .relaxed)
                pumpStarts(viewer)
            }
        case .reply(nil, _, let error):
            tally.recordError("viewer of \(viewer.channel): reply without id (\(error ?? "ok"))")
        case .failure(let reason):
            tally.recordError("viewer of \(viewer.channel): \(reason)")
        case .tick, .started, .other:
            break
        }
        return false
    }

    /// Keeps up to `pipeline` `add`s in flight until the list has all its timers.
    private func pumpAdds(_ viewer: Viewer) {
        var sent = false
        while viewer.addsSent < viewer.timerCount, viewer.addsInFlight < plan.pipeline, !viewer.connection.isClosed {
            let number = viewer.addsSent
            viewer.addsSent += 1
            viewer.addsInFlight += 1
            send(.add, #"{"type":"command","id":\#(viewer.nextRequestID),"channel":"\#(viewer.channel)","action":"add","args":{"event":"load \#(number)","remaining_s":\#(plan.remainingS)}}"#,
                 on: viewer, flush: false)
            sent = true
        }
        if sent { viewer.connection.flush() }
    }

    /// Starts the viewer's next timer, one at a time (the server answers a
    /// connection's requests in order anyway). The first anchors the list's
    /// tick series: ticks fall on its seconds; it waits for the list's slot
    /// in the first second (``TimersPlan/totalLists``). The server computes each tick
    /// for its own second, not for the moment it gets to it, so countdowns
    /// started at any point of a second step by exactly one per tick.
    private func pumpStarts(_ viewer: Viewer) {
        guard starting, !viewer.startInFlight, viewer.startIndex < viewer.ids.count, !viewer.connection.isClosed else { return }
        if viewer.startIndex == 0 {
            let offsetNs = UInt64(viewer.list) * 1_000_000_000 / UInt64(max(1, plan.totalLists))
            guard Loop.hrtime >= startOriginNs + offsetNs else { return }
        }
        viewer.startInFlight = true
        send(.start, #"{"type":"command","id":\#(viewer.nextRequestID),"channel":"\#(viewer.channel)","action":"start","args":{"id":\#(viewer.ids[viewer.startIndex])}}"#,
             on: viewer)
    }

    // MARK: Watchers

    private func openWatcher(list: Int, number: Int) {
        let connection = LoadConnection(loop: loop)
        let watcher = Watcher(connection: connection, list: list, number: number)
        watchers.append(watcher)
        handshake(connection, name: "watcher \(number) of list \(list)") { [unowned self, unowned watcher] body in
            self.watcherReceived(body, watcher)
        }
        connection.open(plan.address) { [unowned self] in connection.send(self.hello("load-watch-\(list)-\(number)")) }
    }

    private func subscribe(_ watcher: Watcher) {
        watcher.connection.send(#"{"type":"subscribe","id":2,"channel":"\#(plan.channelPrefix)-\#(watcher.list)"}"#)
    }

    /// Handles one frame to a watcher; true once its `hello` is answered.
    private func watcherReceived(_ body: UnsafeRawBufferPointer, _ watcher: Watcher) -> Bool {
        switch TimerFrame.classify(body) {
        case .tick(let entries, let at):
            tick(entries, due: at, to: watcher, arrived: Date().timeIntervalSince1970)
        case .started(let id, let remaining):
            if watcher.anchorID == nil {
                watcher.anchorID = id
                watcher.anchorRemaining = remaining
            }
        case .reply(id: 1?, _, error: nil):
            watcher.ready = true
            tally.watchersConnected.add(1, ordering: .relaxed)
            return true
        case .reply(id: 2?, _, error: nil):
            tally.watchersSubscribed.add(1, ordering: .relaxed)
        case .reply(let id, _, let error):
            tally.recordError("watcher \(watcher.number) of list \(watcher.list): request \(id.map(String.init) ?? "?") \(error.map { "refused: \($0)" } ?? "unexpected")")
            return id == 1
        case .failure(let reason):
            tally.recordError("watcher \(watcher.number) of list \(watcher.list): \(reason)")
        case .other:
            break
        }
        return false
    }

    /// Checks one tick: every timer's countdown moves by exactly one second
    /// since the previous tick, and so does the list's reference countdown
    /// (the first started timer), whose seconds give the tick's due time.
    private func tick(_ entries: [(id: Int, remaining: Int)], due: Double?, to watcher: Watcher, arrived: Double) {
        tally.ticksSeen.add(1, ordering: .relaxed)
        if measuring {
            tally.ticks.add(1, ordering: .relaxed)
            tally.updates.add(entries.count, ordering: .relaxed)
        }
        var missed = 0
        var duplicated = 0
        for (id, remaining) in entries {
            guard id >= 0, id < 100_000_000 else {
                tally.recordError("list \(watcher.list): tick with timer id \(id)")
                continue
            }
            if id >= watcher.last.count {
                watcher.last.append(contentsOf: repeatElement(-1, count: id + 1 - watcher.last.count))
            }
            let previous = watcher.last[id]
            watcher.last[id] = remaining
            if previous >= 0 {
                switch previous - remaining {
                case 1: break
                case 0: duplicated += 1
                case let gone where gone > 1: missed += gone - 1
                default: tally.recordError("list \(watcher.list) timer \(id): remaining_s rose from \(previous) to \(remaining)")
                }
            }
            guard id == watcher.anchorID else { continue }
            let second = watcher.anchorRemaining - remaining
            if let lastSecond = watcher.lastSecond {
                switch second - lastSecond {
                case 1: break
                case 0: tally.duplicatedTicks.add(1, ordering: .relaxed)
                case let gone where gone > 1: tally.missedTicks.add(gone - 1, ordering: .relaxed)
                default: tally.recordError("list \(watcher.list): tick for second \(second) after second \(lastSecond)")
                }
            }
            watcher.lastSecond = second
        }
        // Lateness: arrival (this machine's wall clock, which the server's
        // clock also follows) against the second the tick stands for.
        if measuring, let due {
            _ = lateness.record(UInt64(max(1, ((arrived - due) * 1_000_000).rounded())))
            if arrived - due > TimersTally.lateThresholdSeconds { tally.lateTicks.add(1, ordering: .relaxed) }
        }
        if missed > 0 { tally.missedUpdates.add(missed, ordering: .relaxed) }
        if duplicated > 0 { tally.duplicatedUpdates.add(duplicated, ordering: .relaxed) }
    }

    // MARK: Orders

    private func handle(_ order: TimersOrder) {
        switch order {
        case .subscribeWatchers:
            for watcher in watchers where !watcher.connection.isClosed { subscribe(watcher) }
        case .startTimers:
            starting = true
            startOriginNs = Loop.hrtime
            for viewer in viewers { pumpStarts(viewer) }
            starter.start(timeoutMs: 5, repeatMs: 5) { [unowned self] in
                var pending = false
                for viewer in self.viewers where viewer.startIndex < viewer.ids.count && !viewer.connection.isClosed {
                    pending = true
                    self.pumpStarts(viewer)
                }
                if !pending { self.starter.stop() }
            }
        case .measure(let on):
            measuring = on
        case .finish:
            finish()
        }
    }

    private func finish() {
        guard !finished else { return }
        finished = true
        queue.cancel()
        tally.storeLatency(lateness)
        // Watchers first: the viewers' departure pauses every timer
        // (`timer_stopped` events), which nobody needs to receive.
        for watcher in watchers { watcher.connection.close() }
        for viewer in viewers { viewer.connection.close() }
        heartbeat.close()
        starter.close()
        inbox?.close()
    }
}
