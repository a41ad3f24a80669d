import OutaTimeProtocol
import OutaTimeStore
import UV

/// What other threads tell the loop, through its one inbox.
enum ServerMessage: Sendable {
    /// The store writer committed (or failed) these tickets.
    case committed([StoreCommit])
    /// A history read finished.
    case historyRead(ticket: UInt64, Result<[HistoryEvent], StoreFailure>)
    /// Cluster mode: stored channels were read for loading.
    case channelsLoaded(ticket: UInt64, Result<Server.LoadRead, StoreFailure>)
    /// Cluster mode: every stored channel was read, for `list`.
    case channelsRead(ticket: UInt64, Result<[ChannelRecord], StoreFailure>)
    /// SIGINT/SIGTERM or ``ServerHandle/shutdown()``.
    case shutdownRequested
    /// ``ServerHandle/reload()``: reload, then answer with the report.
    case reloadRequested(ReloadAnswer)
    /// ``ServerHandle/reloadTLS(_:)``: new TLS files, and where the outcome goes.
    case reloadTLS(TLSFiles?, OneShot<Result<Void, TLSError>>)
    /// ``ServerHandle/blockLoop(milliseconds:started:)`` (tests): say the
    /// loop is blocked (if asked), keep it busy this long, then say so.
    case blockLoop(milliseconds: Int, started: OneShot<Void>?, OneShot<Void>)
    /// ``ServerHandle/advanceClock(milliseconds:)`` (tests): move the
    /// server's time forward, act on what fell due, then say so.
    case advanceClock(milliseconds: UInt64, OneShot<Void>)
    /// Cluster mode: what the fabric learnt (``ClusterFabric``).
    case cluster(ClusterFabricEvent)
}
