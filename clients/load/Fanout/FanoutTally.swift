import Histogram
import Synchronization
import UV

/// What one worker has seen so far, readable from the coordinating thread
/// (relaxed atomics: the numbers are counters, read for progress and at the end).
final class FanoutTally: WorkerTally, @unchecked Sendable {
    /// Subscribers on this worker (fixed at start).
    let subscriberCount: Int
    /// Connections that completed their setup (`hello`, and `subscribe` for subscribers).
    let ready = Atomic<Int>(0)
    /// Distinct (subscriber, seq) deliveries.
    let delivered = Atomic<Int>(0)
    /// Deliveries of a seq a subscriber had already received.
    let duplicated = Atomic<Int>(0)
    /// The fewest distinct messages any subscriber of this worker has received.
    let slowest = Atomic<Int>(0)
    /// Monotonic time of the last delivery, ns.
    let lastDeliveryNs = Atomic<UInt64>(0)
    /// Publish frames sent (only the worker that hosts the publisher).
    let published = Atomic<Int>(0)

    init(subscriberCount: Int) { self.subscriberCount = subscriberCount }
}

/// Orders to a worker, posted from other threads through its inbox.
enum WorkerOrder: Sendable {
    /// All connections are ready: start publishing (publisher worker).
    case startPublishing
    /// The duration is over: send no more.
    case stopPublishing
    /// Another worker's slowest subscriber advanced: the window may have room.
    case progress
    /// Close everything and let the loop exit.
    case finish
}
