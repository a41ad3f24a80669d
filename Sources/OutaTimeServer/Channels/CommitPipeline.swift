import DequeModule
import Foundation
import OutaTimeDomain
import OutaTimeProtocol

/// One channel's way to storage, in seq order: numbers events, gathers the
/// events of one loop iteration into one batch, decides when the whole state
/// goes with them, keeps the batches the writer has not reported yet, and
/// knows when the channel is settled (nothing in flight).
///
/// Pure bookkeeping: ``Server`` submits the open batch once per loop
/// iteration (``close()``) and reports back what the writer said, oldest
/// batch first (the writer reports in submission order). One batch per
/// channel and iteration: 100 pipelined commands are one write, not 100.
struct CommitPipeline {
    /// Whether the channel exists in storage yet.
    enum Lifecycle: Equatable {
        /// Its creation is being committed; nothing may use it.
        case creating
        case durable
    }

    /// Events committed together, and the replies waiting for them.
    struct Batch {
        /// The seq of `events[0]`.
        let firstSeq: Int64
        private(set) var events: [DomainEvent] = []
        /// When each event happened (ISO 8601, whole seconds).
        private(set) var times: [String] = []
        /// Commands to answer once committed.
        private(set) var replies: [PendingReply] = []
        /// The pipeline's generation when built (see ``reload(seq:storedStateSeq:)``).
        let generation: Int
        /// Whether the whole state is stored with the events.
        fileprivate(set) var storesState = false

        var lastSeq: Int64 { firstSeq + Int64(events.count) - 1 }

        fileprivate mutating func add(_ new: [DomainEvent], at time: String, reply: PendingReply?) {
            events += new
            times += repeatElement(time, count: new.count)
            if let reply { replies.append(reply) }
        }
    }

    private(set) var lifecycle: Lifecycle
    /// The seq of the newest event applied in memory.
    private(set) var seq: Int64
    /// The seq the stored state is as of.
    private(set) var storedStateSeq: Int64
    /// Batches handed to the writer, oldest first, and last the open batch
    /// when ``hasOpenBatch``.
    private(set) var inFlight: Deque<Batch> = []
    /// The last batch of `inFlight` still takes events (this iteration's).
    private(set) var hasOpenBatch = false
    /// Bumped by each reload: a batch of an older generation was built on a
    /// state that is gone (the store refuses it: its seqs no longer follow).
    private var generation = 0

    /// A channel loaded from storage.
    init(storedSeq: Int64, storedStateSeq: Int64) {
        lifecycle = .durable
        seq = storedSeq
        self.storedStateSeq = storedStateSeq
    }

    /// A new channel, not yet stored.
    static func creating() -> CommitPipeline {
        var pipeline = CommitPipeline(storedSeq: 0, storedStateSeq: 0)
        pipeline.lifecycle = .creating
        return pipeline
    }

    /// The seq of the newest committed event (``seq`` less what is in flight).
    var committedSeq: Int64 { inFlight.first.map { $0.firstSeq - 1 } ?? seq }

    /// True once stored.
    var isDurable: Bool { lifecycle == .durable }

    /// Durable with nothing in flight: memory equals storage, so a snapshot
    /// shows only committed events.
    var isSettled: Bool { lifecycle == .durable && inFlight.isEmpty }

    /// The creation is committed.
    mutating func created() {
        lifecycle = .durable
    }

    /// Events in the open batch (0 when there is none).
    var openEventCount: Int { hasOpenBatch ? inFlight[inFlight.count - 1].events.count : 0 }

    /// Numbers `events` (seq + 1 each) into the open batch. Returns true
    /// when this opened it (the channel is to be submitted this iteration).
    mutating func append(_ events: [DomainEvent], at time: String, reply: PendingReply?) -> Bool {
        let opened = !hasOpenBatch
        if opened {
            inFlight.append(Batch(firstSeq: seq + 1, generation: generation))
            hasOpenBatch = true
        }
        inFlight[inFlight.count - 1].add(events, at: time, reply: reply)
        seq += Int64(events.count)
        return opened
    }

    /// Closes the open batch for submission. The whole state goes with it
    /// once at least `every` events were stored since it last was (the
    /// kind's ``ChannelBehaviour/eventsPerStoredState``); memory is then
    /// exactly as of the batch's last event.
    mutating func close(storingStateEvery every: Int64) -> Batch? {
        guard hasOpenBatch else { return nil }
        hasOpenBatch = false
        if seq - storedStateSeq >= every {
            storedStateSeq = seq
            inFlight[inFlight.count - 1].storesState = true
        }
        return inFlight.last
    }

    /// The oldest batch is committed (it was submitted: never the open one).
    mutating func committed() -> Batch {
        inFlight.removeFirst()
    }

    /// The oldest batch failed. Returns it, and whether memory must be
    /// reloaded from storage (not when an earlier failure already did: this
    /// batch was built on the state that reload threw away).
    mutating func failed() -> (Batch, reload: Bool) {
        let batch = inFlight.removeFirst()
        return (batch, batch.generation == generation)
    }

    /// Memory was reloaded from storage: numbering continues from `seq`.
    /// Returns the open batch, if any, which was built on the state thrown
    /// away and is never submitted (its commands fail).
    mutating func reload(seq: Int64, storedStateSeq: Int64) -> Batch? {
        self.seq = seq
        self.storedStateSeq = storedStateSeq
        generation += 1
        guard hasOpenBatch else { return nil }
        hasOpenBatch = false
        return inFlight.removeLast()
    }
}

/// A command's reply that waits for its events' commit: to a local
/// connection (in its place in the connection's order), or, in cluster
/// mode, to the node that forwarded the command.
struct PendingReply {
    enum Target {
        /// A connection of this node, at its reserved slot.
        case local(Connection, ReplySlot)
        /// A node that forwarded the command (``Server/answerForwarded(_:seq:body:)``).
        case remote(ClusterRequestID)
    }

    let target: Target
    let id: RequestID?
    /// The action's outcome, whose `result` is sent once committed.
    let outcome: ActionOutcome
    /// The seq of the command's last event (a forwarding node sends the
    /// reply after relaying the event).
    let lastSeq: Int64
    /// Set for a command with an `idempotency_key` (protocol §6.9): its
    /// reply carries `seq`, and the commit stores the key with the event.
    var keyed: Keyed? = nil

    /// A keyed command's key, action and result. A class: one pointer in
    /// every reply instead of three strings, as most commands carry no key
    /// and replies are copied along the commit pipeline.
    final class Keyed {
        let key: String
        let action: String
        /// The reply's result, encoded once.
        let result: RawJSON

        init(key: String, action: String, result: RawJSON) {
            self.key = key
            self.action = action
            self.result = result
        }

        /// The result as kept for repeats: nil when larger than
        /// ``CommandKeys/maxResultBytes``.
        var keptResult: RawJSON? { result.text.utf8.count <= CommandKeys.maxResultBytes ? result : nil }
    }

    /// Answers the command: its reply, in its place in the session's order.
    func send(on server: Server) {
        if let keyed {
            server.sendKeyedReply(to: target, id: id, result: keyed.result, seq: lastSeq, repeated: false)
            return
        }
        switch target {
        case .local(let session, let slot):
            if let writable = outcome.writableReply {
                session.fill(slot, id: id, writing: writable)
            } else {
                session.fill(slot, id: id, outcome.reply)
            }
        case .remote(let request):
            server.answerForwarded(request, seq: lastSeq, body: server.replyBody(id: id, outcome: outcome))
        }
    }

    /// Fails the command with `error`.
    func fail(_ error: ProtocolError, on server: Server) {
        switch target {
        case .local(let session, let slot): session.fill(slot, id: id, failure: error)
        case .remote(let request) where error.code == .unavailable:
            // Nothing was changed: the forwarding node sends it again.
            server.answerForwarded(request, header: ForwardedAnswer(moved: true), body: [])
        case .remote(let request): server.answerForwarded(request, seq: nil, body: server.failureBody(id: id, error))
        }
    }
}
