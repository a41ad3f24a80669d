import Histogram
import Synchronization
import UV

/// The phase a ping's round trip is counted in, set by the coordinating
/// thread as one number: 0 between phases (not counted), else
/// `round × 2 + 1` for a round's baseline and `round × 2 + 2` for its load.
enum PingPhase {
    static let none = 0
    static func baseline(round: Int) -> Int { round * 2 + 1 }
    static func load(round: Int) -> Int { round * 2 + 2 }
}

/// One protocol client pinging at a steady pace on a loop of its own: a
/// `ping` every `intervalMs` (never two outstanding), each round trip
/// recorded in the histogram of the phase it ended in.
final class PingTally: WorkerTally, @unchecked Sendable {
    /// The current ``PingPhase`` number, written by the coordinator.
    let phase = Atomic<Int>(PingPhase.none)
    /// True once `hello` was answered and pinging began.
    let ready = Atomic<Bool>(false)
    private let histograms = Mutex<[Int: Histogram<UInt64>]?>(nil)

    func store(_ byPhase: [Int: Histogram<UInt64>]) {
        histograms.withLock { $0 = byPhase }
    }

    /// Round trips by phase number, once the worker finished.
    var results: [Int: Histogram<UInt64>]? { histograms.withLock { $0 } }
}

enum PingOrder: Sendable {
    /// Hand the histograms over, close, let the loop end.
    case finish
}

final class PingWorker {
    private let loop: Loop
    private let address: SocketAddress
    private let intervalMs: UInt64
    private let tally: PingTally
    private let connection: LoadConnection
    private let pacer: UV.Timer
    private var inbox: AsyncInbox<PingOrder>?
    private var byPhase: [Int: Histogram<UInt64>] = [:]
    private var nextID = 2
    private var outstanding: (id: Int, sentNs: UInt64, phase: Int)?

    init(loop: Loop, address: SocketAddress, intervalMs: UInt64, tally: PingTally) {
        self.loop = loop
        self.address = address
        self.intervalMs = intervalMs
        self.tally = tally
        connection = LoadConnection(loop: loop)
        pacer = UV.Timer(loop: loop)
    }

    func start() throws(UVError) -> InboxSender<PingOrder> {
        let inbox = try AsyncInbox<PingOrder>(loop: loop) { [unowned self] _ in self.finish() }
        self.inbox = inbox
        connection.onFailure = { [unowned self] reason in self.tally.recordError("pinger: \(reason)") }
        connection.onFrame = { [unowned self] body in self.received(ServerFrame.classify(body)) }
        connection.open(address) { [unowned self] in
            self.connection.send(LoadConnection.hello(name: "load-pinger"))
        }
        return inbox.sender
    }

    private func received(_ frame: ServerFrame) {
        switch frame {
        case .reply(id: 1, error: nil):
            tally.ready.store(true, ordering: .relaxed)
            pacer.start(timeoutMs: intervalMs, repeatMs: intervalMs) { [unowned self] in self.ping() }
        case .reply(let id?, error: nil) where id == outstanding?.id:
            let sent = outstanding!
            outstanding = nil
            let micros = max(1, (Loop.hrtime &- sent.sentNs) / 1_000)
            // Counted only when sent and answered in the same phase.
            guard sent.phase != PingPhase.none, sent.phase == tally.phase.load(ordering: .relaxed) else { return }
            _ = byPhase[sent.phase, default: .microseconds()].record(micros)
        case .reply(_, let error?):
            tally.recordError("pinger: \(error)")
        case .failure(let reason):
            tally.recordError("pinger: \(reason)")
        default:
            break
        }
    }

    private func ping() {
        guard outstanding == nil, !connection.isClosed else { return }
        nextID += 1
        outstanding = (nextID, Loop.hrtime, tally.phase.load(ordering: .relaxed))
        connection.send(#"{"type":"ping","id":\#(nextID)}"#)
    }

    private func finish() {
        tally.store(byPhase)
        pacer.close()
        connection.close()
        inbox?.close()
    }
}
