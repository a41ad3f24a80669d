/// Where durable channel state lives: SQLite on one node (``SQLiteStore``:
/// a ``Store`` with its ``StoreWriter``), NATS JetStream in a cluster
/// (`JetStreamStore`, in the `OutaTimeCluster` module). The server sees only
/// this protocol, and picks the backend through `ServerConfig.storage`.
///
/// Writes are asynchronous and grouped: ``submit(_:ticket:)`` returns at
/// once, and the outcome of every ticket is reported exactly once through
/// the sink the backend was opened with (the server's inbox, which hops to
/// the loop with `uv_async_send`): off the caller's thread, except a
/// submission refused after ``close()``, which may be reported before
/// `submit` returns. The sink gets one call per group, with every ticket of
/// the group. Reads are synchronous and may block: call them from the loop
/// only while starting, or from another thread (the server reads history
/// on the Dispatch pool).
///
/// The contract every backend keeps (the store conformance suite checks it):
/// - a submission is all or nothing in SQLite (one transaction); JetStream,
///   which has no transaction across messages and keys, applies its writes
///   in order and stops at the first refusal. The server relies on neither:
///   each submission it makes is one write, but for drops of idle empty
///   channels, which are independent of each other;
/// - the outcomes of one channel's submissions are reported in submission
///   order (the server's ``CommitPipeline`` counts on it);
/// - an `appendEvents` whose first seq does not follow the stored seq is
///   refused with ``StoreError/seqMismatch(channel:expected:stored:)``, so a
///   channel's log never has a gap or a fork;
/// - a write naming a channel never created is refused with
///   ``StoreError/unknownChannel(_:)``, and `dropEmptyChannel` of a channel
///   with events with ``StoreError/notEmpty(channel:seq:)``;
/// - a submission after ``close()`` is reported failed with
///   ``StoreFailure/writerClosed``;
/// - a reported success is durable in the backend's sense (SQLite: fsynced
///   with `synchronous = FULL`; JetStream: written to the OS on a quorum of
///   servers, fsynced later; docs/CLUSTER.md), and a new instance opened on
///   the same data loads it.
///
/// The functions of the `OutaTimeStoreConformance` test library check each
/// point against any backend.
public protocol DurableStore: AnyObject, Sendable {
    /// Queues `writes` to be committed together (all or none) and returns
    /// at once; the outcome is reported under `ticket`. After ``close()``
    /// the submission is refused and reported failed
    /// (``StoreFailure/writerClosed``). One call per submission: keep the
    /// cost per event inside the backend, off the caller's thread.
    func submit(_ writes: [StoreWrite], ticket: UInt64)

    /// Lets a backend opened paused (tests build a known group) commit.
    func resume()

    /// Commits and reports everything already submitted, then stops taking
    /// writes; idempotent. Reads fail afterwards.
    func close()

    /// Submissions not yet reported (queued or being committed).
    var backlog: Int { get }

    /// Counters since the backend was opened.
    var stats: WriterStats { get }

    /// Bytes of JSON text (states, event data) committed since opened.
    var textBytesWritten: Int { get }

    /// A short name for logs, `stats` and `/healthz`: `sqlite` or `jetstream`.
    var backendName: String { get }

    /// The backend's state for operators (its link, if it has one). Read on
    /// the server's loop, at each `stats`, scrape and health check: a copy
    /// of values kept up to date as things happen, never I/O, never a wait.
    var status: StoreStatus { get }

    /// Every channel this backend holds, ordered by name.
    func loadChannels() throws(StoreFailure) -> [ChannelRecord]

    /// One channel, or nil if it was never created.
    func channel(named name: String) throws(StoreFailure) -> ChannelRecord?

    /// The names of every channel this backend holds, in no set order:
    /// cheaper than ``loadChannels()`` where a backend can list names alone
    /// (cluster mode reads each channel of a gained slot on its own, so one
    /// unreadable channel does not hold the others back).
    func channelNames() throws(StoreFailure) -> [String]

    /// Up to `limit` events of `channel` with seq in `after + 1 ... through`,
    /// oldest first.
    func history(channel: String, after: Int64, through: Int64, limit: Int) throws(StoreFailure) -> [EventRecord]

    /// The seq of the oldest event still kept for `channel`, or nil when it
    /// has none.
    func oldestRetainedSeq(channel: String) throws(StoreFailure) -> Int64?

    /// One of the server's own values (``StoreWrite/setMeta(key:value:)``),
    /// or nil if it was never set.
    func meta(_ key: String) throws(StoreFailure) -> String?

    /// The keyed commands (``EventRecord/command``) of `channel`'s events
    /// with seq above `after`, oldest first. A backend that does not keep
    /// them returns none (the default).
    func commandKeys(channel: String, after: Int64) throws(StoreFailure) -> [StoredCommandKey]

    /// Every channel's keyed commands, by channel and seq (read at start).
    func allCommandKeys() throws(StoreFailure) -> [StoredCommandKey]
}

extension DurableStore {
    /// A backend without a link (SQLite, test doubles): its name only.
    public var status: StoreStatus { StoreStatus(backend: backendName) }

    /// None: a backend that does not keep keyed commands.
    public func commandKeys(channel: String, after: Int64) throws(StoreFailure) -> [StoredCommandKey] { [] }

    /// None: a backend that does not keep keyed commands.
    public func allCommandKeys() throws(StoreFailure) -> [StoredCommandKey] { [] }

    /// From ``loadChannels()``, for backends without a cheaper listing.
    public func channelNames() throws(StoreFailure) -> [String] { try loadChannels().map(\.name) }
}
