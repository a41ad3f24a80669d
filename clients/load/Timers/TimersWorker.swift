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
    /// Requests (`add`s, then `start`s) in flight at most per viewer connection.
    let setupWindow: Int
    /// Connections in their opening handshake at most on this worker.
    let concurrency: Int
    /// Lists in the whole run: list n's first countdown starts n / lists of
    /// a second into the start phase, so the lists' tick seconds are spread
    /// over the second as countdowns started by people would be, not all
    /// due in the same instant.
    let totalLists: Int
}

/// One event loop's share of a timers run: some lists' viewer connections
/// (each subscribes to its list, adds the list's timers, then views every
/// timer with `start` so that it runs, with up to `setupWindow` requests in
/// flight) and some watcher connections (each subscribes to one list and
/// checks every tick). Every connection whose `hello` was answered is
/// pinged through the whole run (``Heartbeats``). Lives on its loop's
/// thread only; the viewers' and watchers' work is in the extensions.
final class TimersWorker {
    let loop: Loop
    let plan: TimersPlan
    let tally: TimersTally
    let queue: OpenQueue
    let heartbeats: Heartbeats
    var viewers: [Viewer] = []
    var watchers: [Watcher] = []
    var measuring = false
    var starting = false
    /// When this worker began the start phase (`Loop.hrtime`).
    var startOriginNs: UInt64 = 0
    var lateness = Histogram<UInt64>.microseconds()
    /// Sends the lists' first `start`s in their slots of the first second.
    let starter: Timer
    private var inbox: AsyncInbox<TimersOrder>?
    private var finished = false

    /// What a viewer's request in flight was.
    enum Request { case hello, subscribe, add, start }

    /// The connection that fills one list and views all its timers.
    final class Viewer {
        let connection: LoadConnection
        let list: Int
        let channel: String
        let timerCount: Int
        /// Requests sent and not answered yet, oldest first.
        var window: RequestWindow<Request>
        var nextRequestID = 1
        var addsSent = 0
        /// Timer ids from the `add` replies, in list order.
        var ids: [Int] = []
        /// `start`s sent (of `ids`, in order).
        var startsSent = 0
        init(connection: LoadConnection, list: Int, channel: String, timerCount: Int, window: Int) {
            self.connection = connection
            self.list = list
            self.channel = channel
            self.timerCount = timerCount
            self.window = RequestWindow(capacity: window + 2)
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
        heartbeats = Heartbeats(loop: loop)
        starter = Timer(loop: loop)
    }

    /// Creates the inbox (returned for other threads) and queues every connection.
    func start() throws(UVError) -> InboxSender<TimersOrder> {
        let inbox = try AsyncInbox<TimersOrder>(loop: loop) { [unowned self] orders in
            for order in orders { self.handle(order) }
        }
        self.inbox = inbox
        heartbeats.start()
        // Viewers first: filling the lists is the long part of the setup.
        for (list, timers) in plan.viewers { queue.add { [unowned self] in self.openViewer(list: list, timers: timers) } }
        for (list, number) in plan.watchers { queue.add { [unowned self] in self.openWatcher(list: list, number: number) } }
        return inbox.sender
    }


    private static let heartbeatKey = Array(#""heartbeat_ms":"#.utf8)

    /// A connection's `hello` was answered: it gets heartbeats from now on,
    /// at the pace the server asks for in the hello result.
    func helloAnswered(_ body: UnsafeRawBufferPointer, on connection: LoadConnection) {
        if let heartbeatMs = WireBytes.int(after: Self.heartbeatKey, in: body) {
            heartbeats.adopt(serverHeartbeatMs: heartbeatMs)
        }
        heartbeats.add(connection)
    }

    /// Wires `connection`'s callbacks: every frame goes to `received`, which
    /// says when the connection's setup handshake is complete; the open
    /// queue hears once that it ended, on completion or on the first failure.
    func handshake(_ connection: LoadConnection, name: String, received: @escaping (UnsafeRawBufferPointer) -> Bool) {
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

    // MARK: Orders

    private func handle(_ order: TimersOrder) {
        switch order {
        case .subscribeWatchers:
            for watcher in watchers where !watcher.connection.isClosed { subscribe(watcher) }
        case .startTimers:
            starting = true
            startOriginNs = Loop.hrtime
            for viewer in viewers { pumpStarts(viewer) }
            // Lists whose slot in the first second has not come yet.
            starter.start(timeoutMs: 5, repeatMs: 5) { [unowned self] in
                var waiting = false
                for viewer in self.viewers where viewer.startsSent == 0 && !viewer.ids.isEmpty && !viewer.connection.isClosed {
                    waiting = true
                    self.pumpStarts(viewer)
                }
                if !waiting { self.starter.stop() }
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
        heartbeats.close()
        starter.close()
        inbox?.close()
    }
}
