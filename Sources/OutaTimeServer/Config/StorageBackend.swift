import Logging
import OutaTimeStore

/// Where the server keeps its durable state (``ServerConfig/storage``): the
/// one choice the server makes about storage. Everything after opening goes
/// through ``DurableStore`` alone, so a new backend (cluster mode's
/// JetStream store) plugs in here without touching the server.
public enum StorageBackend: Sendable {
    /// SQLite in the file ``ServerConfig/databasePath``, locked against a
    /// second server (``SQLiteStore``). The default.
    case sqlite
    /// A backend the caller opens: cluster mode's `JetStreamStore`, or a
    /// test's. Called once, on the thread starting the server, before any
    /// channel is loaded; the store it returns must report every outcome
    /// through ``StoreOpening/onCommit`` and is closed by the server when
    /// its loop ends. An error thrown here fails the start.
    case custom(@Sendable (StoreOpening) throws -> any DurableStore)

    /// Opens the backend for a server configured by `config`.
    func open(_ opening: StoreOpening, config: ServerConfig) throws -> any DurableStore {
        switch self {
        case .sqlite:
            try SQLiteStore(path: config.databasePath, historyLimit: opening.historyLimit,
                            foldEvery: SQLiteStore.serverFoldEvery, onCommit: opening.onCommit)
        case .custom(let open):
            try open(opening)
        }
    }
}

/// What the server hands a backend it opens: its settings and the sink of
/// its outcomes. A struct, so that a field added later leaves existing
/// factories compiling.
public struct StoreOpening: Sendable {
    /// Durable events kept per channel (``ServerConfig/historyLimit``):
    /// `history` and recovery need no more, so older ones may be pruned.
    public var historyLimit: Int
    /// The server's logger, for the backend's own messages.
    public var logger: Logger
    /// Where outcomes go: one call per committed group, off the loop
    /// thread (it posts to the loop's inbox). Keep it the backend's only
    /// way to report.
    public var onCommit: @Sendable ([StoreCommit]) -> Void

    /// Creates the opening settings.
    public init(historyLimit: Int, logger: Logger, onCommit: @escaping @Sendable ([StoreCommit]) -> Void) {
        self.historyLimit = historyLimit
        self.logger = logger
        self.onCommit = onCommit
    }
}

extension SQLiteStore {
    /// New events are appended to the store's unindexed tail and moved into
    /// the indexed log (and pruned to the history limit) every this many
    /// events: see `Store.apply(_:historyLimit:foldEvery:foldLater:)`. A
    /// channel may then hold up to this many events more than the limit,
    /// which `history` does not show (``Server/historyStart(of:)``); readers
    /// scan at most this many tail rows. Measured under 50 clients on 50
    /// channels (docs/BENCHMARKS.md): 2,048 gave a fold every 0.08 s and a
    /// p99 of 15 ms, 8,192 a fold (about 50 ms) every 0.3 s and a p99 of
    /// 3.7 ms.
    static let serverFoldEvery = 8_192
}
