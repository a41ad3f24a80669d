import DequeModule
import Foundation
import OutaTimeDomain
import OutaTimeProtocol

/// One channel's way to storage, in seq order: numbers events, decides when
/// the whole state goes with them, keeps the batches the writer has not
/// reported yet, and knows when the channel is settled (nothing in flight).
///
/// Pure bookkeeping: ``Server`` submits what ``append(_:at:reply:storesState:)``
/// returns and reports back what the writer said, oldest batch first (the
/// writer reports in submission order).
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
        let events: [DomainEvent]
        /// When they happened (ISO 8601, whole seconds).
        let at: String
        /// Commands to answer once committed.
        var replies: [PendingReply]
        /// The pipeline's generation when built (see ``reload(seq:storedStateSeq:)``).
        let generation: Int

        var lastSeq: Int64 { firstSeq + Int64(events.count) - 1 }
    }

    private(set) var lifecycle: Lifecycle
    /// The seq of the newest event applied in memory.
    private(set) var seq: Int64
    /// The seq the stored state is as of.
    private(set) var storedStateSeq: Int64
    /// Batches handed to the writer, oldest first.
    private(set) var inFlight: Deque<Batch> = []
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

    /// True once stored.
    var isDurable: Bool { lifecycle == .durable }

    /// Durable with nothing in flight: memory equals storage, so a snapshot
    /// shows only committed events.
    var isSettled: Bool { lifecycle == .durable && inFlight.isEmpty }

    /// The creation is committed.
    mutating func created() {
        lifecycle = .durable
    }

    /// Whether a batch of `count` events stores the whole state too: once at
    /// least `every` events were stored since it last was (the kind's
    /// ``ChannelBehaviour/eventsPerStoredState``).
    func storesState(adding count: Int, every: Int64) -> Bool {
        seq + Int64(count) - storedStateSeq >= every
    }

    /// Numbers `events` (seq + 1 each) into a batch now in flight.
    mutating func append(_ events: [DomainEvent], at time: String, reply: PendingReply?,
                         storesState: Bool) -> Batch {
        let batch = Batch(firstSeq: seq + 1, events: events, at: time,
                          replies: reply.map { [$0] } ?? [], generation: generation)
        seq += Int64(events.count)
        if storesState { storedStateSeq = seq }
        inFlight.append(batch)
        return batch
    }

    /// The oldest batch is committed.
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
    mutating func reload(seq: Int64, storedStateSeq: Int64) {
        self.seq = seq
        self.storedStateSeq = storedStateSeq
        generation += 1
    }
}

/// A command's reply that waits for its events' commit.
struct PendingReply {
    let session: Session
    let id: RequestID?
    let slot: ReplySlot
    /// The `result` to send once committed.
    let result: any Encodable & Sendable
}
