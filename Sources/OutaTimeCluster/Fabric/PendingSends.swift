import HeapModule
import OutaTimeServer

/// The sends of a ``NATSClusterFabric`` still waiting for their answer,
/// with their deadlines: whoever takes an entry out (the reply, the timer,
/// a failed publish, the stop) delivers its one answer. Kept behind the
/// fabric's lock; every method is short.
struct PendingSends {
    /// One send waiting.
    struct Entry {
        /// Distinguishes sends of a ticket reused after its answer.
        var serial: UInt64
        /// The node sent to (for the failure's text).
        var node: String
        /// The timeout asked for (for the failure).
        var ms: Int
    }

    /// When an entry times out. Entries answered earlier stay in the heap
    /// until their moment (lazy removal): the heap holds at most the sends
    /// of the last timeout span.
    struct Deadline: Comparable {
        var at: ContinuousClock.Instant
        var serial: UInt64
        var ticket: UInt64

        static func < (lhs: Deadline, rhs: Deadline) -> Bool {
            lhs.at != rhs.at ? lhs.at < rhs.at : lhs.serial < rhs.serial
        }
    }

    /// An answer to deliver.
    struct Outcome {
        var ticket: UInt64
        var result: Result<[UInt8], ClusterFabricFailure>
    }

    /// What ``admit(ticket:node:ms:deadline:)`` decided.
    enum Admission {
        /// Waiting; `wake`: its deadline is the earliest, the timer must look again.
        case admitted(serial: UInt64, wake: Bool)
        /// Another send with this ticket is still waiting.
        case duplicate
        /// The fabric stopped.
        case closed
    }

    private(set) var entries: [UInt64: Entry] = [:]
    private var deadlines = Heap<Deadline>()
    /// Failures found on a caller's thread, delivered by the timer thread.
    private var failed: [Outcome] = []
    private var serial: UInt64 = 0
    private(set) var closed = false

    /// Records a send due to time out at `deadline`.
    mutating func admit(ticket: UInt64, node: String, ms: Int, deadline: ContinuousClock.Instant) -> Admission {
        if closed { return .closed }
        if entries[ticket] != nil { return .duplicate }
        serial += 1
        let wake = deadlines.min.map { deadline < $0.at } ?? true
        entries[ticket] = Entry(serial: serial, node: node, ms: ms)
        deadlines.insert(Deadline(at: deadline, serial: serial, ticket: ticket))
        return .admitted(serial: serial, wake: wake)
    }

    /// Takes the waiting send of `ticket` out (only the one numbered
    /// `serial`, when given); nil when it was answered already.
    mutating func take(_ ticket: UInt64, serial: UInt64? = nil) -> Entry? {
        guard let entry = entries[ticket], serial.map({ $0 == entry.serial }) ?? true else { return nil }
        entries[ticket] = nil
        return entry
    }

    /// Queues a failure for the timer thread to deliver; false when closed
    /// (the caller delivers it).
    mutating func queue(_ outcome: Outcome) -> Bool {
        if closed { return false }
        failed.append(outcome)
        return true
    }

    /// The answers due at `now` (timeouts and queued failures) and the next
    /// deadline, if any.
    mutating func takeDue(at now: ContinuousClock.Instant) -> (due: [Outcome], next: ContinuousClock.Instant?) {
        var due = failed
        failed.removeAll()
        while let first = deadlines.min, first.at <= now {
            deadlines.removeMin()
            if let entry = take(first.ticket, serial: first.serial) {
                due.append(Outcome(ticket: first.ticket, result: .failure(.timeout(node: entry.node, ms: entry.ms))))
            }
        }
        return (due, deadlines.min?.at)
    }

    /// Closes: no send is admitted from now on; returns every answer still
    /// owed (queued failures, and `failure(node)` for each waiting send).
    mutating func close(failure: (String) -> ClusterFabricFailure) -> [Outcome] {
        closed = true
        var owed = failed
        failed.removeAll()
        for (ticket, entry) in entries {
            owed.append(Outcome(ticket: ticket, result: .failure(failure(entry.node))))
        }
        entries.removeAll()
        deadlines = Heap()
        return owed
    }
}
