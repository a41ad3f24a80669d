import Histogram
import Synchronization
import UV

/// The phase a ping's round trip is counted in, set by the coordinating
/// thread: pings answered between phases are not counted.
enum PingPhase: Int {
    case none = 0, baseline = 1, load = 2
}

/// One protocol client pinging at a steady pace on a loop of its own: a
/// `ping` every `intervalMs` (never two outstanding), each round trip
/// recorded in the histogram of the phase it ended in.
final class PingTally: WorkerTally, @unchecked Sendable {
    /// ``PingPhase`` raw value, written by the coordinator.
    let phase = Atomic<Int>(PingPhase.none.rawValue)
    /// True once `hello` was answered and pinging began.
    let ready = Atomic<Bool>(false)
    private let histograms = Mutex<[Histogram<UInt64>]>([])

    func store(baseline: Histogram<UInt64>, load: Histogram<UInt64>) {
        histograms.withLock { $0 = [baseline, load] }
    }

    /// (baseline, load) once the worker finished.
    var results: (baseline: Histogram<UInt64>, load: Histogram<UInt64>)? {
        histograms.withLock { $0.count == 2 ? ($0[0], $0[1]) : nil }
    }
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
    private var baseline = Histogram<UInt64>.microseconds()
    private var load = Histogram<UInt64>.microseconds()
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
            self.connection.send(#"{"type":"hello","id":1,"protocol":1,"client":"outatime-load/0.1","name":"load-pinger"}"#)
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
            guard sent.phase == tally.phase.load(ordering: .relaxed) else { return }
            switch PingPhase(rawValue: sent.phase) {
            case .baseline: _ = baseline.record(micros)
            case .load: _ = load.record(micros)
            default: break
            }
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
        tally.store(baseline: baseline, load: load)
        pacer.close()
        connection.close()
        inbox?.close()
    }
}
