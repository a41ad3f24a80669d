import DequeModule
import OutaTimeProtocol

/// One connection's requests in order (protocol §17, "Pipelining").
///
/// Requests run as their frames arrive. A durable command does not hold up
/// the ones behind it: it is applied at once, its events join the next group
/// commit, and only its reply waits — so a client that sends commands back
/// to back gets them committed together. Two things do hold up the input:
/// a request that cannot run yet (its channel is being created, or a
/// snapshot must wait for the channel's commits) and a read done off the
/// loop (`history`, recovery). Until it is done, later frames wait here.
/// A connection over its request rate waits the same way, for its next
/// window, with reading stopped (``Connection/overRequestRate(_:)``).
///
/// Replies leave in request order: one answered early waits behind an
/// earlier one still waiting for its commit.
struct RequestQueue {
    /// Whether the next request may run.
    enum Input {
        /// Requests run as their frames arrive.
        case reading
        /// A request is parked; it and the frames after it (`backlog`, in
        /// arrival order) wait.
        case waiting(Parked, backlog: Deque<[UInt8]>)
    }

    /// Why the input waits. Indirect (boxed): it is rare, and every
    /// connection carries an ``Input`` (8 bytes for it instead of about 50).
    indirect enum Parked {
        /// `request` could not run yet: it runs again when its channel is
        /// ready (created, or its commits done).
        case retry(Request)
        /// The reply at `slot` comes from a read off the loop.
        case read(ReplySlot)
        /// The connection sent its ``ServerConfig/maxRequestsPerSecond``
        /// for this window: `frame` (the first over it) runs when the next
        /// window starts. Reading stays stopped meanwhile (``isFull``).
        case rateLimited(frame: [UInt8])
    }

    private(set) var input = Input.reading
    /// Bytes held in the backlog.
    private var backlogBytes = 0
    /// A reply's place: filled or not yet.
    private enum Answer {
        case waiting
        /// Filled: the frame, or nil for a request without an id.
        case ready(Frame?)
    }

    /// Replies not yet sent, oldest first.
    private var unsent: Deque<Answer> = []
    /// The slot number of `unsent.first`.
    private var firstSlot: UInt64 = 0

    /// While parked, at most this many later frames (or bytes) wait before
    /// the server stops reading the connection (TCP backpressure).
    /// Stopping and restarting with every waiting request cost two
    /// `epoll_ctl` calls each (docs/BENCHMARKS.md).
    static let backlogFrames = 16
    static let backlogBytes = 256 * 1024
    /// At most this many replies wait for their commits before the server
    /// stops reading the connection: a client pipelines at most this deep.
    static let pipelineDepth = 1024

    /// True while a request is parked.
    var isWaiting: Bool {
        if case .waiting = input { return true }
        return false
    }

    /// True while anything is unanswered: the idle timeout does not apply.
    var isBusy: Bool { isWaiting || !unsent.isEmpty }

    /// True when the server should stop reading until the queue shrinks
    /// (or, rate-limited, until the next window).
    var isFull: Bool {
        switch input {
        case .waiting(.rateLimited, _):
            true
        case .waiting(_, let backlog):
            backlog.count >= Self.backlogFrames || backlogBytes >= Self.backlogBytes
        case .reading:
            unsent.count >= Self.pipelineDepth
        }
    }

    // MARK: Input

    /// Parks the input: `parked` and every frame after it wait.
    mutating func park(_ parked: Parked) {
        precondition(!isWaiting, "a request parked while another was parked")
        input = .waiting(parked, backlog: [])
    }

    /// Keeps a frame that arrived while parked.
    mutating func hold(_ body: UnsafeRawBufferPointer) {
        guard case .waiting(let parked, var backlog) = input else {
            preconditionFailure("a frame held while reading")
        }
        input = .reading  // let go of the backlog's storage while appending
        backlog.append(Array(body))
        backlogBytes += body.count
        input = .waiting(parked, backlog: backlog)
    }

    /// Ends the wait: returns what was parked and the frames held behind it,
    /// which the caller runs in order (re-parking hands the rest back with
    /// ``requeue(_:)``).
    mutating func unpark() -> (Parked, Deque<[UInt8]>)? {
        guard case .waiting(let parked, let backlog) = input else { return nil }
        input = .reading
        backlogBytes = 0
        return (parked, backlog)
    }

    /// Puts frames not yet run back behind the request that parked again.
    mutating func requeue(_ frames: Deque<[UInt8]>) {
        guard !frames.isEmpty, case .waiting(let parked, var backlog) = input else { return }
        input = .reading
        backlog.prepend(contentsOf: frames)
        backlogBytes = backlog.reduce(0) { $0 + $1.count }
        input = .waiting(parked, backlog: backlog)
    }

    /// Forgets everything (the connection is closing).
    mutating func clear() {
        self = RequestQueue()
    }

    // MARK: Replies

    /// The reply goes out now when nothing before it is unanswered;
    /// otherwise it waits in order and nil is returned.
    mutating func answer(_ frame: Frame) -> Frame? {
        guard !unsent.isEmpty else { return frame }
        unsent.append(.ready(frame))
        return nil
    }

    /// A place for a reply that comes later.
    mutating func reserve() -> ReplySlot {
        unsent.append(.waiting)
        return ReplySlot(number: firstSlot + UInt64(unsent.count - 1))
    }

    /// Fills `slot` (nil: the request needs no reply); returns the replies
    /// that may now go out, in order.
    mutating func fill(_ slot: ReplySlot, with frame: Frame?) -> [Frame] {
        guard slot.number >= firstSlot, slot.number - firstSlot < UInt64(unsent.count) else { return [] }
        unsent[Int(slot.number - firstSlot)] = .ready(frame)
        var ready: [Frame] = []
        while case .ready(let frame)? = unsent.first {
            if let frame { ready.append(frame) }
            unsent.removeFirst()
            firstSlot += 1
        }
        return ready
    }
}

/// The place of one reply in a connection's order.
struct ReplySlot: Equatable {
    let number: UInt64
}
