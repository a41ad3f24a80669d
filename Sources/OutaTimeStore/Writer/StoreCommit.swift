/// The outcome of one submission to the ``StoreWriter``.
public struct StoreCommit: Sendable, Equatable {
    /// The ticket given to ``StoreWriter/submit(_:ticket:)``.
    public var ticket: UInt64
    /// Why the submission was not stored, or nil when it is committed (on
    /// disk, fsynced) and its events may be broadcast.
    public var error: String?
    /// How many submissions the writer took together in the group this one
    /// was part of (0 for a submission refused because the writer is closed).
    public var batchSize: Int

    /// Creates an outcome.
    public init(ticket: UInt64, error: String?, batchSize: Int) {
        self.ticket = ticket
        self.error = error
        self.batchSize = batchSize
    }

    /// True when the submission is committed.
    public var succeeded: Bool { error == nil }
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

    /// All counters zero.
    public init() {}
}
