import GRDB

/// The outcome of one submission to a ``DurableStore`` (with SQLite, to
/// the ``StoreWriter``).
public struct StoreCommit: Sendable, Equatable {
    /// The ticket given to ``DurableStore/submit(_:ticket:)``.
    public var ticket: UInt64
    /// Why the submission was not stored, or nil when it is committed (on
    /// disk, fsynced) and its events may be broadcast.
    public var error: StoreFailure?
    /// How many submissions the writer took together in the group this one
    /// was part of (0 for a submission refused because the writer is closed).
    public var batchSize: Int
    /// Seconds the writer thread spent committing the group, fsync (and any
    /// one-by-one retry) included; the same for every ticket of the group,
    /// 0 for a submission refused because the writer is closed. Measured
    /// on the writer thread and carried here, so the loop records it
    /// without a lock of its own.
    public var commitSeconds: Double

    /// Creates an outcome.
    public init(ticket: UInt64, error: StoreFailure?, batchSize: Int, commitSeconds: Double = 0) {
        self.ticket = ticket
        self.error = error
        self.batchSize = batchSize
        self.commitSeconds = commitSeconds
    }

    /// True when the submission is committed.
    public var succeeded: Bool { error == nil }

    /// Equal outcomes: the same ticket, error and group size. The time
    /// taken is a measurement, not part of the outcome.
    public static func == (lhs: StoreCommit, rhs: StoreCommit) -> Bool {
        lhs.ticket == rhs.ticket && lhs.error == rhs.error && lhs.batchSize == rhs.batchSize
    }
}

/// Why a write (or a read) failed: typed, so that the loop thread can tell
/// a refused write (a bug: memory and storage disagree) from a failing
/// database (disk full, read-only file) and from a closed writer.
public enum StoreFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The store refused the write before SQLite saw it (see ``StoreError``).
    case refused(StoreError)
    /// SQLite failed: its primary result code (`SQLITE_FULL`, `SQLITE_READONLY`,
    /// …; 0 when the error came from elsewhere) and its message.
    case database(code: Int32, message: String)
    /// The store (its writer) was closed before the submission reached it.
    case writerClosed

    /// Classifies an error thrown while applying a write.
    public init(_ error: any Error) {
        switch error {
        case let failure as StoreFailure: self = failure
        case let refused as StoreError: self = .refused(refused)
        case let database as DatabaseError:
            self = .database(code: database.resultCode.primaryResultCode.rawValue, message: "\(database)")
        default: self = .database(code: 0, message: "\(error)")
        }
    }

    /// Runs `body` and throws what it throws as a ``StoreFailure``
    /// (``init(_:)``): how an implementation of ``DurableStore`` maps the
    /// errors of its database or link into the store boundary's one type.
    public static func mapping<T>(_ body: () throws -> T) throws(StoreFailure) -> T {
        do {
            return try body()
        } catch let failure as StoreFailure {
            throw failure
        } catch {
            throw StoreFailure(error)
        }
    }

    /// One line naming what failed.
    public var description: String {
        switch self {
        case .refused(let error): "\(error)"
        case .database(_, let message): message
        case .writerClosed: "store writer is closed"
        }
    }
}

/// Counters of the writer since it started, for the server's `stats`.
public struct WriterStats: Sendable, Equatable {
    /// Groups committed in one shared transaction.
    public var batchesCommitted = 0
    /// Groups whose shared transaction failed and were retried one
    /// submission per transaction.
    public var batchFallbacks = 0
    /// Submissions committed.
    public var writesCommitted = 0
    /// Submissions that failed (their error went to their ticket).
    public var writesFailed = 0
    /// Submissions refused because the writer was closing or closed.
    public var writesRejected = 0
    /// The most submissions ever taken in one group.
    public var largestBatch = 0
    /// Times the tail was moved into the indexed log after a group.
    public var folds = 0
    /// Folds that failed (made again at the next one due).
    public var foldsFailed = 0
    /// Time spent committing groups (their transactions, fsync included,
    /// and any one-by-one retries), in nanoseconds.
    public var commitNanoseconds: UInt64 = 0

    /// All counters zero.
    public init() {}
}
