import Foundation
import OutaTimeStore

/// How the conformance checks open a backend: one harness is one check's
/// data, empty at first.
///
/// Every call of ``open`` opens a NEW instance of the backend on the SAME
/// data (a SQLite file in a temporary folder, a JetStream stream with a
/// name of its own); the checks close one instance before they open the
/// next, so a backend that allows one writer at a time passes. Make a new
/// harness for every check (the checks assume empty data), and keep at
/// least 1,000 events per channel: no check relies on pruning.
public struct DurableStoreHarness: Sendable {
    /// Where a backend reports outcomes (``DurableStore``'s sink).
    public typealias Sink = @Sendable ([StoreCommit]) -> Void

    /// Opens a new backend instance on this harness's data. With
    /// `startsPaused`, submissions queue until `resume()` or `close()`, so
    /// that a check builds a known group.
    public let open: @Sendable (_ startsPaused: Bool, _ onCommit: @escaping Sink) throws -> any DurableStore

    /// Whether a submission of several writes is all or nothing (SQLite: one
    /// transaction). False for a backend that applies them in order and
    /// stops at the first refusal (JetStream: no transaction across
    /// messages and keys); the server relies on neither, since each of its
    /// submissions is one write but for drops of independent empty channels.
    public let atomicSubmissions: Bool

    /// A harness whose instances `open` makes.
    public init(atomicSubmissions: Bool = true,
                open: @escaping @Sendable (_ startsPaused: Bool, _ onCommit: @escaping Sink) throws -> any DurableStore) {
        self.atomicSubmissions = atomicSubmissions
        self.open = open
    }
}

/// Why a check stopped before it could assert more.
public enum ConformanceError: Error, CustomStringConvertible {
    /// A ticket's outcome did not arrive within ``OutcomeRecorder/patience``.
    case notReported(ticket: UInt64)
    /// Fewer outcomes than expected arrived within the patience.
    case tooFewReported(expected: Int, reported: Int)

    /// One line naming what did not arrive.
    public var description: String {
        switch self {
        case .notReported(let ticket): "ticket \(ticket) was never reported"
        case .tooFewReported(let expected, let reported): "\(reported) outcomes reported, \(expected) expected"
        }
    }
}

/// Collects what a backend reports, from whatever thread reports it.
final class OutcomeRecorder: @unchecked Sendable {
    /// How long a check waits for an outcome: only keeps a broken backend
    /// from hanging the suite, never a timing guess.
    static let patience: TimeInterval = 30

    private let condition = NSCondition()
    private var reported: [StoreCommit] = []

    /// The sink to open a backend with.
    var sink: DurableStoreHarness.Sink {
        { [self] commits in
            condition.withLock {
                reported.append(contentsOf: commits)
                condition.broadcast()
            }
        }
    }

    /// Every outcome so far, in the order reported.
    var all: [StoreCommit] { condition.withLock { reported } }

    /// Waits until `count` outcomes in all have been reported.
    func waitForCount(_ count: Int) throws {
        let deadline = Date(timeIntervalSinceNow: Self.patience)
        try condition.withLock {
            while reported.count < count {
                guard condition.wait(until: deadline) else {
                    throw ConformanceError.tooFewReported(expected: count, reported: reported.count)
                }
            }
        }
    }

    /// Waits for `ticket`'s first outcome and returns it.
    func waitFor(ticket: UInt64) throws -> StoreCommit {
        let deadline = Date(timeIntervalSinceNow: Self.patience)
        return try condition.withLock {
            while true {
                if let commit = reported.first(where: { $0.ticket == ticket }) { return commit }
                guard condition.wait(until: deadline) else { throw ConformanceError.notReported(ticket: ticket) }
            }
        }
    }
}

/// One open backend instance with its recorder and tickets: what every
/// check drives.
final class OpenStore {
    let store: any DurableStore
    let outcomes = OutcomeRecorder()
    private(set) var submitted: [UInt64] = []

    init(_ harness: DurableStoreHarness, startsPaused: Bool = false) throws {
        store = try harness.open(startsPaused, outcomes.sink)
    }

    /// Submits `writes` under a new ticket (tickets count up from 1).
    @discardableResult
    func submit(_ writes: [StoreWrite]) -> UInt64 {
        let ticket = UInt64(submitted.count + 1)
        submitted.append(ticket)
        store.submit(writes, ticket: ticket)
        return ticket
    }

    /// Submits `writes` and waits for their outcome.
    func commit(_ writes: [StoreWrite]) throws -> StoreCommit {
        try outcomes.waitFor(ticket: submit(writes))
    }

    /// Submits `writes`, waits, and returns the failure (nil: committed).
    func failure(of writes: [StoreWrite]) throws -> StoreFailure? {
        try commit(writes).error
    }
}
